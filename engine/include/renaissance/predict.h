// SPDX-License-Identifier: GPL-3.0-or-later
// Classifying images with a trained model: PNG or JPEG files fitted to the
// project's input and normalised as its dataset is, run through the model's
// inference graph on the CPU with a checkpoint's weights, each image's most
// likely classes with their probabilities; for a labelled folder (one
// subfolder per class) also the accuracy and the confusion matrix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/checkpoint.h>
#include <renaissance/project.h>

namespace tr {

struct PredictImage {
  std::string file;
  int32_t label = -1;  // the true class, when known (a labelled folder)
};

struct ClassScore {
  int32_t index = 0;
  std::string name;
  double p = 0;  // probability
};

struct Prediction {
  std::string file;
  int32_t label = -1;
  std::vector<ClassScore> top;  // most likely first; empty when `error` is set
  std::vector<float> logits;    // the model's output, one per class (empty with `error`)
  std::string error;            // why the image could not be read
};

struct PredictReport {
  std::vector<Prediction> predictions;  // in the order given
  std::vector<std::string> class_names;
  int64_t labelled = 0, correct = 0;  // among the readable labelled images (top-1)
  // classes x classes, row = true label, column = predicted; empty without labels.
  std::vector<int64_t> confusion;
};

// What a dataset calls its classes: an image folder's class folders (what
// training reads), else the project's or the kind's names
// (dataset_class_names).
std::vector<std::string> class_names_of(const DatasetSpec& dataset);

// An image folder's class folders, sorted as training labels them; empty for
// the other kinds and for folders that cannot be read (or hold another
// number of classes than the project).
std::vector<std::string> folder_class_names(const DatasetSpec& dataset);

// A class name as a folder may spell it: lower case, each run of other
// characters than letters and digits one dash ("T-shirt/top" ->
// "t-shirt-top", "Ankle boot" -> "ankle-boot"); a '/' cannot be in a
// folder's name.
std::string class_folder_form(const std::string& class_name);

// The images of `dir`: with class subfolders, those folders' images labelled
// by `class_names` (a folder is named as its class, or as its
// class_folder_form where no two classes share that form; a folder no class
// is named after is an error, naming it); else the PNG and JPEG files in
// `dir` itself, unlabelled. Throws UsageError naming what is wrong.
std::vector<PredictImage> folder_images(const std::string& dir,
                                        const std::vector<std::string>& class_names);

// Classifies `images` with `project`'s model and `checkpoint`'s trained
// weights (FP32, on the CPU, whatever the project trains with), keeping the
// `top` most likely classes of each. An unreadable image gets its error and
// no classes. Throws UsageError when the checkpoint does not fit the model
// (naming the tensors), ProjectError when the model does not analyse.
PredictReport predict_images(const Project& project, const Checkpoint& checkpoint,
                             const std::vector<PredictImage>& images, int top = 5);

}  // namespace tr
