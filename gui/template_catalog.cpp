// SPDX-License-Identifier: GPL-3.0-or-later
#include "template_catalog.h"

#include <QCoreApplication>
#include <QFile>

#include <renaissance/error.h>
#include <renaissance/project_io.h>

namespace tr::gui {

namespace {

QString title(const char* text) {
  return QCoreApplication::translate("ProjectTemplate", text);
}

}  // namespace

const std::vector<ProjectTemplate>& project_templates() {
  static const std::vector<ProjectTemplate> kTemplates = {
      {"lenet-fashion", title("LeNet-5 (Fashion-MNIST)"), ":/templates/lenet-fashion.json"},
      {"cnn-bn-fashion", title("BN CNN (Fashion-MNIST)"), ":/templates/cnn-bn-fashion.json"},
      {"resnet8-fashion", title("ResNet-8 (Fashion-MNIST)"), ":/templates/resnet8-fashion.json"},
      {"resnet20", title("ResNet-20 (32x32x3, synthetic data)"), ":/templates/resnet20.json"},
      {"resnet20-cifar10", title("ResNet-20 (CIFAR-10)"), ":/templates/resnet20-cifar10.json"},
      {"vgg-fashion", title("VGG-style (Fashion-MNIST)"), ":/templates/vgg-fashion.json"},
      {"vit-tiny-fashion", title("Vision Transformer, tiny (Fashion-MNIST)"),
       ":/templates/vit-tiny-fashion.json"},
  };
  return kTemplates;
}

Project load_template(const ProjectTemplate& t) {
  QFile f(t.resource);
  if (!f.open(QIODevice::ReadOnly))
    throw UsageError("the built-in template " + t.resource.toStdString() + " is missing");
  const QByteArray text = f.readAll();
  Project p = parse_project(std::string_view(text.constData(), static_cast<size_t>(text.size())),
                            t.resource.toStdString());
  p.source_path.clear();
  return p;
}

Project default_template_project() {
  return load_template(project_templates().front());
}

}  // namespace tr::gui
