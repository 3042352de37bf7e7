// Data that is not what its reader takes but something that wraps or
// encodes it: compressed by a tool whose format is not read (7-Zip),
// compressed or archived once more inside a compressed file or a zip
// archive (which common/data/data_file.h opens), a .npy or safetensors
// file given as another kind, a pickle, UTF-16 text as Excel saves "Unicode
// Text". An error should say which it got, and what to do, not only that
// the first bytes are wrong.
#pragma once

#include <string>
#include <string_view>

namespace accumulus::data {

// What to do about a file that begins as `bytes` do, when they are a known
// compressor's, archiver's, pickle's or UTF-16's signature ("the data is
// xz-compressed inside the file's own compression: decompress it first
// (unxz)"); "" otherwise.
std::string FileSignatureHint(std::string_view bytes);

// An HDF5 file's signature (pandas' to_hdf, h5py, Keras' .h5 models).
inline constexpr std::string_view kHdf5Signature{"\x89HDF\r\n\x1A\n", 8};

// Whether `bytes` begin as a Python pickle of protocol 2 to 5 does (PROTO
// and the protocol's number): torch.save's legacy format, pickle.dump.
bool IsPickle(std::string_view bytes);

// Whether `bytes` begin as a safetensors file does: its header's length,
// which must fit the file, then the header's JSON object and a key.
bool IsSafetensors(std::string_view bytes);

}  // namespace accumulus::data
