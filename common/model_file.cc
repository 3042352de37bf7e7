#include "common/model_file.h"

#include <memory>

#include "common/data/compressed_file.h"
#include "common/data/file_signature.h"
#include "common/data/mapped_file.h"
#include "common/data/zip_archive.h"

namespace accumulus {
namespace {

constexpr const char* kHowToSave =
    "save the module as TorchScript: torch.jit.save(torch.jit.script(net), path), or "
    "torch.jit.trace(net, example_input) in place of torch.jit.script";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// What PyTorch's archives hold, by the names under their one top folder
// (torch.save, torch.jit.save and torch.export.save all name it after the
// file, "net/data.pkl").
struct ArchiveLayout {
  bool data_pickle = false;       // data.pkl: torch.save's and TorchScript's
  bool constants_pickle = false;  // constants.pkl: TorchScript's
  bool code = false;              // code/: TorchScript's compiled Python
  bool exported_program = false;  // torch.export's, or AOTInductor's package

  void Add(std::string_view name) {
    const size_t slash = name.find('/');
    if (slash == std::string_view::npos) return;
    const std::string_view inside = name.substr(slash + 1);
    data_pickle |= inside == "data.pkl";
    constants_pickle |= inside == "constants.pkl";
    code |= StartsWith(inside, "code/");
    // The PT2 archive (torch 2.6 on): archive_format, models/NAME.json; torch
    // 2.1 to 2.5: serialized_exported_program.json; AOTInductor's package.
    exported_program |= inside == "archive_format" ||
                        inside == "serialized_exported_program.json" ||
                        (StartsWith(inside, "models/") && EndsWith(inside, ".json")) ||
                        StartsWith(inside, "data/aotinductor/");
  }
};

// What a file that is no zip archive is, where its first bytes say.
std::string WhatIsNotAnArchive(std::string_view bytes) {
  if (bytes.empty()) return "the file is empty";
  if (const data::Compression c = data::CompressionOf(bytes); c != data::Compression::kNone) {
    return std::string("the file is ") + data::CompressionName(c) +
           "-compressed: decompress it first (" + data::DecompressionTool(c) + ")";
  }
  if (data::IsPickle(bytes)) {
    return "the file is a Python pickle (torch.save's legacy format, or pickle.dump), which is "
           "never loaded (it runs code); " +
           std::string(kHowToSave);
  }
  if (data::IsSafetensors(bytes)) {
    return "the file is a safetensors file: weights without the module that uses them; " +
           std::string(kHowToSave);
  }
  if (StartsWith(bytes, data::kHdf5Signature)) {
    return "the file is an HDF5 file (as Keras saves models), not a PyTorch module";
  }
  return "not a TorchScript module: torch.jit.save writes a zip archive, and this file is not "
         "one; " +
         std::string(kHowToSave);
}

}  // namespace

Status CheckTorchScriptBytes(const std::string& field, const std::string& path,
                             std::string_view bytes) {
  const auto refuse = [&](const std::string& what) {
    return Status::InvalidArgument(field + " " + path + ": " + what);
  };
  if (!data::ZipArchive::Is(bytes)) return refuse(WhatIsNotAnArchive(bytes));
  StatusOr<data::ZipArchive> zip = data::ZipArchive::Parse(field, path, bytes);
  if (!zip.ok()) return zip.status();
  ArchiveLayout layout;
  for (const data::ZipMember& member : zip->members()) layout.Add(member.name);
  if (layout.data_pickle && layout.constants_pickle && layout.code) return Status::Ok();
  if (layout.exported_program) {
    return refuse(
        "a torch.export program (torch.export.save, .pt2), which LibTorch cannot load for "
        "training; " +
        std::string(kHowToSave));
  }
  if (layout.data_pickle) {
    return refuse(
        "a file torch.save wrote (a state_dict, or a module pickled with its Python class), "
        "which only Python can load; " +
        std::string(kHowToSave));
  }
  return refuse(
      "a zip archive that holds no TorchScript module (torch.jit.save writes ROOT/data.pkl, "
      "ROOT/constants.pkl and ROOT/code/); " +
      std::string(kHowToSave));
}

Status CheckTorchScriptFile(const std::string& field, const std::string& path) {
  StatusOr<std::unique_ptr<data::MappedFile>> file = data::MappedFile::Open(field, path);
  if (!file.ok()) return file.status();
  return CheckTorchScriptBytes(field, path, (*file)->bytes());
}

}  // namespace accumulus
