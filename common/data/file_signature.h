// Files that are not the plain data their reader takes but something that
// wraps or encodes it: MNIST's .gz files, a .csv.gz as pandas reads it,
// numpy.savez's .npz (a zip archive), a pickle, UTF-16 text as Excel saves
// "Unicode Text". An error should say which it got, and what to do, not
// only that the first bytes are wrong.
#pragma once

#include <string>
#include <string_view>

namespace accumulus::data {

// What to do about a file that begins as `bytes` do, when they are a known
// compressor's, archiver's, pickle's or UTF-16's signature ("the file is
// gzip-compressed: decompress it first (gunzip)"); "" otherwise.
std::string FileSignatureHint(std::string_view bytes);

}  // namespace accumulus::data
