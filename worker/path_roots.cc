#include "worker/path_roots.h"

#include <filesystem>
#include <system_error>
#include <tuple>

namespace accumulus::worker {
namespace {

namespace fs = std::filesystem;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string List(const std::vector<std::string>& roots) {
  std::string out;
  for (const std::string& r : roots) out += (out.empty() ? "" : ", ") + r;
  return out;
}

bool Within(const fs::path& path, const std::string& root) {
  const std::string p = path.string();
  return p == root || (p.size() > root.size() && p.compare(0, root.size(), root) == 0 &&
                       (root.back() == '/' || p[root.size()] == '/'));
}

// Resolves `value` of spec field `field` against `roots` (relative: from the
// first). `must_exist`: a file to read (every symlink resolved); otherwise a
// file or directory to create (the part that exists resolved, the rest
// normalized). A path that cannot be resolved is `unresolved`'s fault (a
// missing data file is the data's), one outside the roots the spec's.
StatusOr<std::string> Confine(const std::string& field, const std::string& value,
                              const std::vector<std::string>& roots, const std::string& flag,
                              bool must_exist, Fault unresolved) {
  if (value.empty() || roots.empty()) return value;
  fs::path given(value);
  if (given.is_relative()) given = fs::path(roots.front()) / given;
  std::error_code error;
  const fs::path resolved =
      must_exist ? fs::canonical(given, error) : fs::weakly_canonical(given, error);
  if (error) {
    return Status::FailedPrecondition(field + " " + Quoted(value) + ": " +
                                      (must_exist && error == std::errc::no_such_file_or_directory
                                           ? "no such file"
                                           : error.message()) +
                                      " (looked for " + given.lexically_normal().string() + "; " +
                                      flag + " " + List(roots) + ")")
        .WithFault(unresolved);
  }
  for (const std::string& root : roots) {
    if (Within(resolved, root)) return resolved.string();
  }
  return Status::FailedPrecondition(field + " " + Quoted(value) + " resolves to " +
                                    resolved.string() + ", outside this worker's " + flag + " (" +
                                    List(roots) + ")")
      .WithFault(Fault::kSpec);
}

}  // namespace

StatusOr<PathRoots> ResolveRoots(const PathRoots& roots) {
  PathRoots out;
  for (const auto& [flag, given, resolved] :
       {std::tuple{"--data-root", &roots.data, &out.data},
        std::tuple{"--output-root", &roots.output, &out.output}}) {
    for (const std::string& root : *given) {
      std::error_code error;
      const fs::path path = fs::canonical(root, error);
      if (error || !fs::is_directory(path, error)) {
        return Status::InvalidArgument(std::string(flag) + " " + root + ": " +
                                       (error ? error.message() : "not a directory"));
      }
      resolved->push_back(path.string());
    }
  }
  return out;
}

StatusOr<v1::JobSpec> ConfinePaths(const v1::JobSpec& spec, const PathRoots& roots) {
  v1::JobSpec out = spec;
  struct Field {
    const char* name;
    std::string* value;
    bool read;
    Fault unresolved;
  };
  const Field fields[] = {
      {"model.path", out.mutable_model()->mutable_path(), true, Fault::kSpec},
      {"data.path", out.mutable_data()->mutable_path(), true, Fault::kData},
      {"data.labels_path", out.mutable_data()->mutable_labels_path(), true, Fault::kData},
      {"output", out.mutable_output(), false, Fault::kStorage},
      {"checkpoint.dir", out.mutable_checkpoint()->mutable_dir(), false, Fault::kStorage},
  };
  for (const Field& f : fields) {
    StatusOr<std::string> confined = f.read
                                         ? Confine(f.name, *f.value, roots.data, "--data-root",
                                                   /*must_exist=*/true, f.unresolved)
                                         : Confine(f.name, *f.value, roots.output, "--output-root",
                                                   /*must_exist=*/false, f.unresolved);
    if (!confined.ok()) return confined.status();
    *f.value = *confined;
  }
  return out;
}

}  // namespace accumulus::worker
