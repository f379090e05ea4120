// SPDX-License-Identifier: GPL-3.0-or-later
// The keys of the metadata the exporter writes into an ONNX model's
// metadata_props and the importer reads back (docs/onnx.md lists them for
// other tools): how the input is normalised, the dataset and the classes.
#pragma once

namespace tr::onnx_metadata {

inline constexpr const char* kProject = "renaissance.project";
inline constexpr const char* kInput = "renaissance.input";
inline constexpr const char* kMean = "renaissance.mean";  // comma-separated, one per channel
inline constexpr const char* kStd = "renaissance.std";
inline constexpr const char* kStep = "renaissance.step";
inline constexpr const char* kWeights = "renaissance.weights";  // "ema" or "master"
inline constexpr const char* kDataset = "renaissance.dataset";  // the project file's dataset kind
// A JSON array of strings: the class names in label order (output index k is
// the k-th name).
inline constexpr const char* kClassNames = "renaissance.class_names";

}  // namespace tr::onnx_metadata
