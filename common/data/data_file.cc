#include "common/data/data_file.h"

#include <vector>

#include "common/cgroup_limits.h"
#include "common/data/compressed_file.h"
#include "common/data/shown_name.h"
#include "common/data/tar_archive.h"
#include "common/data/zip_archive.h"

namespace accumulus::data {
namespace {

// The bytes of a member that `describe` sees.
constexpr size_t kHeadBytes = 4096;

std::string Bytes(size_t n) { return std::to_string(n) + " bytes"; }

// "x_train.npy (uint8 (60000, 28, 28)), y_train.npy (uint8 (60000,))":
// the archive's data members, for an error that asks for one of them.
std::string ListMembers(const ZipArchive& archive, const std::vector<const ZipMember*>& members,
                        const MemberChoice& choice) {
  std::vector<std::string> described;
  for (size_t i = 0; i < members.size(); ++i) {
    described.push_back(members[i]->ShownName());
    if (!choice.describe || i >= kMostListed) continue;  // only the shown are looked into
    StatusOr<std::string> head = archive.Peek(*members[i], kHeadBytes, DecompressionBudget());
    const std::string what = head.ok() ? choice.describe(*head) : "";
    if (!what.empty()) described.back() += " (" + what + ")";
  }
  return ShownList(described);
}

// The member `choice` names, or the archive's one data member where it
// names none; else an error that lists the data members.
StatusOr<const ZipMember*> ChooseMember(const ZipArchive& archive, const std::string& field,
                                        const std::string& path, const MemberChoice& choice) {
  std::vector<const ZipMember*> data;
  // Office Open XML and OpenDocument files are zip archives too.
  bool excel = false, opendocument_type = false, opendocument_content = false;
  for (const ZipMember& m : archive.members()) {
    if (!m.IsAside()) data.push_back(&m);
    excel |= m.name == "xl/workbook.xml";
    opendocument_type |= m.name == "mimetype";
    opendocument_content |= m.name == "content.xml";
  }
  if (excel || (opendocument_type && opendocument_content)) {
    return Status::InvalidArgument(field + " " + path +
                                   ": a spreadsheet (an Excel .xlsx or OpenDocument .ods "
                                   "workbook), not a zip archive of data: save the sheet as "
                                   "\"CSV UTF-8\" (pandas.read_excel(path).to_csv(out, "
                                   "index=False))");
  }
  if (!choice.name.empty()) {
    // The name as given first: an archive may hold both "x" and "x.npy".
    for (const std::string& name : {choice.name, choice.name + choice.implied_suffix}) {
      for (const ZipMember* m : data) {
        if (m->name == name) return m;
      }
    }
    return Status::InvalidArgument(
        choice.field + " \"" + choice.name + "\" is not in " + field + " " + path +
        (data.empty() ? ", an empty zip archive"
                      : ", a zip archive of " + ListMembers(archive, data, choice)));
  }
  if (data.size() == 1) return data.front();
  if (data.empty()) return Status::InvalidArgument(field + " " + path + ": an empty zip archive");
  if (choice.field.empty()) {
    return Status::InvalidArgument(field + " " + path + ": a zip archive of " +
                                   std::to_string(data.size()) + " files (" +
                                   ListMembers(archive, data, choice) +
                                   "); a zip of one file is read: extract the one to use");
  }
  return Status::InvalidArgument(choice.field + " is required: " + field + " " + path +
                                 " is a zip archive of " + std::to_string(data.size()) + " (" +
                                 ListMembers(archive, data, choice) + "): name the one to read");
}

}  // namespace

size_t DecompressionBudget() { return static_cast<size_t>(UsableMemoryBytes() / 2); }

StatusOr<std::unique_ptr<DataFile>> DataFile::Open(const std::string& field,
                                                   const std::string& path,
                                                   const MemberChoice& choice) {
  StatusOr<std::unique_ptr<MappedFile>> mapped = MappedFile::Open(field, path);
  if (!mapped.ok()) return mapped.status();
  std::unique_ptr<DataFile> file(new DataFile());
  file->mapped_ = std::move(*mapped);
  file->bytes_ = file->mapped_->bytes();
  file->name_ = path;
  const bool zip = ZipArchive::Is(file->bytes_);
  if (!choice.name.empty() && !zip) {
    return Status::InvalidArgument(choice.field + " \"" + choice.name +
                                   "\" names a member of a zip archive (.npz), and " + field + " " +
                                   path + " is not one: leave " + choice.field + " out");
  }
  Status opened =
      zip ? file->TakeZipMember(field, path, choice) : file->TakeDecompressed(field, path);
  if (opened.ok() && TarArchive::Is(file->bytes_)) opened = file->TakeTarMember(field, path);
  if (!opened.ok()) return opened;
  return file;
}

Status DataFile::TakeDecompressed(const std::string& field, const std::string& path) {
  const Compression compression = CompressionOf(bytes_);
  if (compression == Compression::kNone) return Status::Ok();
  // The content, and the decoder's window or dictionary besides, each
  // within the budget.
  const size_t budget = DecompressionBudget();
  StatusOr<std::string> content = Decompress(compression, field, path, bytes_, budget, budget);
  if (!content.ok()) return content.status();
  decompressed_ = std::move(*content);
  mapped_.reset();
  bytes_ = decompressed_;
  name_ = path + " (decompressed)";
  reading_ = std::string(CompressionName(compression)) +
             "-compressed, decompressed in memory: " + Bytes(bytes_.size());
  return Status::Ok();
}

Status DataFile::TakeZipMember(const std::string& field, const std::string& path,
                               const MemberChoice& choice) {
  StatusOr<ZipArchive> archive = ZipArchive::Parse(field, path, bytes_);
  if (!archive.ok()) return archive.status();
  StatusOr<const ZipMember*> chosen = ChooseMember(*archive, field, path, choice);
  if (!chosen.ok()) return chosen.status();
  const ZipMember& member = **chosen;
  StatusOr<std::string_view> content = archive->Read(member, DecompressionBudget(), &decompressed_);
  if (!content.ok()) return content.status();
  bytes_ = *content;
  name_ = path + "[" + member.ShownName() + "]";
  const std::string how =
      member.method == ZipMember::kDeflated ? "deflated" : "compressed with " + member.MethodName();
  reading_ = "member " + member.ShownName() + " of a zip archive, " +
             (member.method == ZipMember::kStored
                  ? "stored: read in place"
                  : how + ", decompressed in memory: " + Bytes(bytes_.size()));
  if (member.method != ZipMember::kStored) mapped_.reset();
  return Status::Ok();
}

Status DataFile::TakeTarMember(const std::string& field, const std::string& path) {
  StatusOr<TarArchive> archive = TarArchive::Parse(field, name_, bytes_);
  if (!archive.ok()) return archive.status();
  std::vector<const TarMember*> data;
  for (const TarMember& m : archive->members()) {
    if (!m.IsAside()) data.push_back(&m);
  }
  if (data.size() != 1) {
    std::vector<std::string> names;
    for (const TarMember* m : data) names.push_back(m->ShownName());
    return Status::InvalidArgument(
        field + " " + name_ + ": a tar archive of " +
        (data.empty() ? std::string("no file")
                      : std::to_string(data.size()) + " files (" + ShownList(names) +
                            "); a tar of one file is read: extract the one to use"));
  }
  const TarMember& member = *data.front();
  bytes_ = archive->Read(member);
  name_ = path + "[" + member.ShownName() + "]";
  reading_ = (reading_.empty() ? "" : reading_ + "; ") + "member " + member.ShownName() +
             " of a tar archive" + (mapped_ != nullptr ? ": read in place" : "");
  return Status::Ok();
}

}  // namespace accumulus::data
