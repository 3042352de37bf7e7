#include "common/yaml_document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/impl.h>
#include <yaml-cpp/node/parse.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <vector>

#include "common/user_text.h"

namespace accumulus {
namespace {

// The events of a stream reduced to where each document starts and whether
// its root is empty: no nodes are built, so a second pass over the text
// costs no memory whatever its aliases stand for.
class DocumentRoots : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;
    YAML::Mark root;
    bool empty = true;
  };

  const std::vector<Document>& documents() const { return documents_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    documents_.push_back({mark, mark, true});
    depth_ = 0;
    rooted_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, /*empty=*/true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, false);
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, false);
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Node(const YAML::Mark& mark, bool empty) {
    if (depth_ > 0 || rooted_ || documents_.empty()) return;
    documents_.back().root = mark;
    documents_.back().empty = empty;
    rooted_ = true;
  }

  std::vector<Document> documents_;
  int depth_ = 0;
  bool rooted_ = false;
};

std::string At(const std::string& source, const YAML::Mark& mark) {
  return source + ": line " + std::to_string(mark.line + 1) + ", column " +
         std::to_string(mark.column + 1);
}

// Walks every document of the stream without building it. yaml-cpp's parser
// can stall on a token no node begins with, answering each call with one
// more empty document at the same place: two documents starting at one
// position are that stall, and what stalls it is reported.
Status CheckOneDocument(const std::string& yaml, const std::string& source,
                        const std::string& what) {
  std::istringstream stream(yaml);
  YAML::Parser parser(stream);
  DocumentRoots roots;
  while (parser.HandleNextDocument(roots)) {
    const std::vector<DocumentRoots::Document>& documents = roots.documents();
    const size_t n = documents.size();
    if (n >= 2 && documents[n - 1].start.pos == documents[n - 2].start.pos) {
      const YAML::Mark& at = documents[n - 1].start;
      const std::string text =
          at.pos >= 0 && static_cast<size_t>(at.pos) < yaml.size() ? yaml.substr(at.pos, 1) : "";
      return Status::InvalidArgument(At(source, at) + ": unexpected " + QuotedForError(text) +
                                     " where a YAML value or a new document must begin");
    }
    if (n >= 2 && !documents[n - 1].empty) {
      return Status::InvalidArgument(source + ": line " +
                                     std::to_string(documents[n - 1].root.line + 1) +
                                     ": a second YAML document; " + what + " is one document");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<YAML::Node> LoadOneYamlDocument(const std::string& yaml, const std::string& source,
                                         const std::string& what) {
  try {
    if (Status s = CheckOneDocument(yaml, source, what); !s.ok()) return s;
    return YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(At(source, e.mark) + ": " + e.msg);
  }
}

}  // namespace accumulus
