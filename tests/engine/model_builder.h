// SPDX-License-Identifier: GPL-3.0-or-later
// Test helpers shared by engine tests: build a Project's model in code, LayerParams makers.
#pragma once

#include <QByteArray>
#include <QString>
#include <QtGlobal>

#include <cstdint>
#include <initializer_list>
#include <string>

#include <renaissance/project.h>
#include <renaissance/shape.h>

namespace tr {
// Lets QCOMPARE print shapes on failure (found by argument-dependent lookup).
inline char* toString(const Shape& s) {
  return qstrdup(s.str().c_str());
}
}  // namespace tr

inline QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// Builds a Project's model in code: nodes by id, edges by id. The project has
// a train and a validation variant and the default dataset; tests needing
// other settings change them through project().
class ModelBuilder {
 public:
  ModelBuilder() {
    p_.name = "test";
    p_.source_path = "in-memory.json";
    p_.variants = {{"train", tr::VariantKind::Train, 0, 0, 0},
                   {"val", tr::VariantKind::Validation, 100, 0, 0}};
  }

  ModelBuilder& node(const std::string& id, tr::LayerType type, tr::LayerParams params = {}) {
    tr::LayerNode n;
    n.id = id;
    n.type = type;
    n.params = params;
    p_.model.nodes.push_back(n);
    return *this;
  }
  ModelBuilder& edge(const std::string& from, const std::string& to, int to_port = 0) {
    const int f = p_.model.find(from);
    const int t = p_.model.find(to);
    if (f < 0 || t < 0)
      qFatal("ModelBuilder: unknown node in edge %s -> %s", from.c_str(), to.c_str());
    p_.model.edges.push_back({f, 0, t, to_port});
    return *this;
  }
  // Edges along a chain of ids: chain({"a","b","c"}) is a->b, b->c.
  ModelBuilder& chain(std::initializer_list<const char*> ids) {
    const char* prev = nullptr;
    for (const char* id : ids) {
      if (prev) edge(prev, id);
      prev = id;
    }
    return *this;
  }
  // Learnable synthetic h x w x c samples (mean 0.5, std 0.25 per channel) in
  // `classes` classes, with train, last-batch and validation variants.
  ModelBuilder& synthetic_data(int64_t h, int64_t w, int64_t c, int64_t classes, int64_t train_size,
                               int64_t val_size, int64_t val_batch) {
    tr::DatasetSpec& d = p_.dataset;
    d.kind = tr::DatasetKind::Synthetic;
    d.height = h;
    d.width = w;
    d.channels = c;
    d.classes = classes;
    d.train_size = train_size;
    d.val_size = val_size;
    d.mean.assign(static_cast<size_t>(c), 0.5);
    d.std.assign(static_cast<size_t>(c), 0.25);
    p_.variants = {{"train", tr::VariantKind::Train, 0, 0, 0},
                   {"last", tr::VariantKind::LastBatch, 0, 0, 0},
                   {"val", tr::VariantKind::Validation, val_batch, 0, 0}};
    return *this;
  }
  tr::Project& project() { return p_; }
  tr::Project build() const { return p_; }

 private:
  tr::Project p_;
};

inline tr::LayerParams input(int64_t h, int64_t w, int64_t c) {
  tr::LayerParams p;
  p.height = h;
  p.width = w;
  p.channels = c;
  return p;
}

inline tr::LayerParams conv(int64_t out, int64_t kh, int64_t kw, int64_t sh = 1, int64_t sw = 1,
                            int64_t ph = 0, int64_t pw = 0, bool bias = true) {
  tr::LayerParams p;
  p.out_channels = out;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  p.bias = bias;
  return p;
}

inline tr::LayerParams square_conv(int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0,
                                   bool bias = true) {
  return conv(out, k, k, stride, stride, pad, pad, bias);
}

inline tr::LayerParams pool(int64_t k, int64_t stride, int64_t pad = 0) {
  return conv(0, k, k, stride, stride, pad, pad);
}

inline tr::LayerParams linear(int64_t out, bool bias = true) {
  tr::LayerParams p;
  p.out_channels = out;
  p.bias = bias;
  return p;
}
