#include "common/data/file_signature.h"

#include <array>

#include "common/data/compressed_file.h"
#include "common/data/little_endian.h"

namespace accumulus::data {

std::string FileSignatureHint(std::string_view bytes) {
  struct Signature {
    std::string_view magic;
    const char* hint;
  };
  using namespace std::string_view_literals;
  static constexpr std::array<Signature, 10> kSignatures = {{
      {"PK\x03\x04"sv,
       "the data is a zip archive inside the file's own compression or archive: extract it "
       "first"},
      {"PK\x05\x06"sv, "the data is an empty zip archive"},
      {"7z\xBC\xAF\x27\x1C"sv, "the file is a 7-Zip archive: extract it first"},
      {"\xFF\xFE"sv,
       "the file is UTF-16 text (as Excel saves \"Unicode Text\"): save it as UTF-8 (\"CSV "
       "UTF-8\")"},
      {"\xFE\xFF"sv, "the file is UTF-16 text: save it as UTF-8"},
      // Tables and arrays in formats that are not read here, as pandas,
      // h5py, Excel and SQLite write them.
      {"PAR1"sv,
       "the file is a Parquet file, which is not read: write the table as CSV "
       "(pandas.read_parquet(path).to_csv(out, index=False)), or its arrays with numpy.save"},
      {"ARROW1"sv,
       "the file is an Arrow IPC (Feather) file, which is not read: write the table as CSV "
       "(pandas.read_feather(path).to_csv(out, index=False))"},
      {kHdf5Signature,
       "the file is an HDF5 file (pandas' to_hdf, h5py, Keras' .h5), which is not read: save its "
       "arrays with numpy.save or as safetensors"},
      {"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"sv,
       "the file is a legacy Office document (an Excel 97-2003 .xls workbook): save the sheet as "
       "\"CSV UTF-8\""},
      {"SQLite format 3\0"sv,
       "the file is an SQLite database: export the table as CSV (sqlite3 -header -csv FILE "
       "\"SELECT ...\")"},
  }};
  for (const Signature& s : kSignatures) {
    if (bytes.substr(0, s.magic.size()) == s.magic) return s.hint;
  }
  // The readers see what the file held, decompressed: compressed again.
  if (const Compression compression = CompressionOf(bytes); compression != Compression::kNone) {
    return std::string("the data is ") + CompressionName(compression) +
           "-compressed inside the file's own compression: decompress it first (" +
           DecompressionTool(compression) + ")";
  }
  // The other formats read, where a job names the wrong kind: .npy's magic;
  // a safetensors file's header length (which must fit the file), then its
  // JSON object's first key.
  if (bytes.substr(0, 6) == "\x93NUMPY") {
    return "the file is a NumPy .npy file: data.kind \"npy\" reads it";
  }
  if (IsSafetensors(bytes)) {
    return "the file is a safetensors file: data.kind \"safetensors\" reads it";
  }
  if (IsPickle(bytes)) {
    return "the file is a Python pickle, which is never loaded (it runs code): save arrays with "
           "numpy.save";
  }
  return "";
}

bool IsPickle(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80 && bytes[1] >= 2 &&
         bytes[1] <= 5;
}

bool IsSafetensors(std::string_view bytes) {
  return bytes.size() >= 10 && bytes[8] == '{' && bytes[9] == '"' &&
         LittleEndian(bytes, 0, 8) <= bytes.size() - 8;
}

}  // namespace accumulus::data
