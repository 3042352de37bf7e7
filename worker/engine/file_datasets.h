// Data sets read from files on the worker. CSV and IDX files are read whole
// at the start; a token file is mapped and its samples built per
// micro-batch (common/data/mapped_file.h). Each loader fails with
// INVALID_ARGUMENT (or NOT_FOUND) naming the file, the line or byte offset,
// and what was expected there.
#pragma once

#include <memory>

#include "common/status.h"
#include "worker/engine/dataset.h"

namespace accumulus::engine {

// CSV: numeric columns, one sample per line, an optional header line (taken
// as a header when any of its fields is not a number). The label column is
// config.label_column; the others are the features. classification: the
// label is a class index, below config.outputs where that is set (else
// outputs = max label + 1); regression: a number. Every value is finite.
// Errors name the file, the line and the column, never what is there.
StatusOr<std::unique_ptr<Dataset>> LoadCsvDataset(const DataConfig& config);

// IDX (the MNIST format): config.path holds the samples (unsigned bytes,
// any number of dimensions; images of rows × cols become 1 × rows × cols,
// scaled to [0, 1]), config.labels_path one unsigned byte label per sample.
StatusOr<std::unique_ptr<Dataset>> LoadIdxDataset(const DataConfig& config);

// Token files: a flat array of little-endian uint8 or uint16 token ids.
// "documents": cut at config.separator ids (not part of any document),
// each document padded to config.sequence_length (longer ones continue in
// the next sample); "blocks": consecutive blocks of sequence_length + 1
// tokens. Targets are the next token, kIgnoreIndex on padding. The file is
// mapped, not read: a corpus larger than memory trains, and the trainer's
// memory holds 16 bytes per documents-layout sample (nothing per block).
StatusOr<std::unique_ptr<Dataset>> LoadTokenDataset(const DataConfig& config);

}  // namespace accumulus::engine
