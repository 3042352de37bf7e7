// Data sets read from files on the worker. CSV, IDX and .npy files are read whole
// at the start; a token file is mapped and its samples built per
// micro-batch (common/data/mapped_file.h). Any of them may be gzip-compressed
// or a zip archive's member, .npy arrays those of a .npz archive
// (common/data/data_file.h); what is compressed is decompressed into
// memory. Each loader fails with INVALID_ARGUMENT (or NOT_FOUND) naming the
// file, the line or byte offset, and what was expected there.
#pragma once

#include <memory>

#include "common/status.h"
#include "worker/engine/dataset.h"

namespace accumulus::engine {

// CSV (data::ParseCsv): numeric columns, one sample per line, an optional
// header line. The label column is config.label_column, or for regression
// the config.label_columns (one output each); the others are the features.
// classification: the label is a class index, below config.outputs where
// that is set (else outputs = max label + 1), or a class name (numbered in
// byte order); regression: numbers, as many per row as config.outputs where
// that is set. Every value is finite. Errors name the file, the line and
// the column, never what is there.
StatusOr<std::unique_ptr<Dataset>> LoadCsvDataset(const DataConfig& config);

// IDX (the MNIST format) and NumPy's .npy: config.path holds the samples
// (any of the format's numeric types, any number of dimensions, the first
// the samples; unsigned bytes are pixels scaled to [0, 1], others the
// numbers they hold; rows × cols become 1 × rows × cols images),
// config.labels_path one class label per sample (whole numbers of any type)
// or, for regression, the targets: [N] or [N, M]. .npy: config.array and
// config.labels_array name the arrays of .npz archives.
StatusOr<std::unique_ptr<Dataset>> LoadIdxDataset(const DataConfig& config);
StatusOr<std::unique_ptr<Dataset>> LoadNpyDataset(const DataConfig& config);

// Hugging Face's safetensors files (common/data/safetensors_file.h): the
// samples are config.path's tensor config.array, the labels (or targets)
// config.labels_path's tensor config.labels_array (each: the file's one
// tensor where unnamed), read as IDX and .npy arrays are; BF16 too.
StatusOr<std::unique_ptr<Dataset>> LoadSafetensorsDataset(const DataConfig& config);

// Token files: a flat array of little-endian uint8, uint16 or uint32 token
// ids (the vocabulary: every id of uint8 and uint16; the largest uint32 id
// in the file + 1).
// "documents": cut at config.separator ids (not part of any document),
// each document padded to config.sequence_length (longer ones continue in
// the next sample); "blocks": consecutive blocks of sequence_length + 1
// tokens. Targets are the next token, kIgnoreIndex on padding. The file is
// mapped, not read: a corpus larger than memory trains, and the trainer's
// memory holds 16 bytes per documents-layout sample (nothing per block).
StatusOr<std::unique_ptr<Dataset>> LoadTokenDataset(const DataConfig& config);

}  // namespace accumulus::engine
