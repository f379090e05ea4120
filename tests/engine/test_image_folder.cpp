// SPDX-License-Identifier: GPL-3.0-or-later
// The user's own images: PNG and JPEG decoding (libpng, libjpeg-turbo) with
// every damaged file named, the fit to a model's input (channels, bilinear
// size), and image folders: classes by subfolder, validation classes checked
// against the training ones, unreadable images stopping the load or left out,
// and the decoded cache reused until a file changes.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <zlib.h>
#include <cstddef>
#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/dataset_probe.h>
#include <renaissance/error.h>
#include <renaissance/predict.h>
#include <renaissance/project_io.h>
#include "data/dataset.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "png_files.h"
#include "usage_error.h"
using namespace tr;
using tr::test::pattern;
using tr::test::usage_error;
using tr::test::write_png;

namespace {

void write_jpeg(const std::string& path, int w, int h, int c, const std::vector<uint8_t>& px) {
  jpeg_compress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_compress(&info);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  QVERIFY(f);
  jpeg_stdio_dest(&info, f);
  info.image_width = static_cast<JDIMENSION>(w);
  info.image_height = static_cast<JDIMENSION>(h);
  info.input_components = c;
  info.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(px.data()) + info.next_scanline * static_cast<size_t>(w * c);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::fclose(f);
  jpeg_destroy_compress(&info);
}

void cut(const std::string& path, size_t keep) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(std::min(keep, bytes.size()));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

size_t file_size(const std::string& path) {
  return static_cast<size_t>(std::filesystem::file_size(path));
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put_be32(std::string& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    bytes[at + static_cast<size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
}

}  // namespace

class TestImageFolder : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string at(const std::string& name) const { return (dir_.path() + "/").toStdString() + name; }
  // A tree of folders of images: {"train/cat/a.png", ...}, each 8x6 RGB.
  void images(const std::vector<std::string>& files) {
    int salt = 0;
    for (const std::string& f : files) {
      std::filesystem::create_directories(std::filesystem::path(at(f)).parent_path());
      std::vector<uint8_t> px = pattern(8, 6, 3);
      for (uint8_t& v : px) v = static_cast<uint8_t>(v + salt);
      ++salt;
      if (f.ends_with(".png"))
        write_png(at(f), 8, 6, 3, px);
      else
        write_jpeg(at(f), 8, 6, 3, px);
    }
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void decodesPngAndJpeg() {
    write_png(at("rgb.png"), 5, 4, 3, pattern(5, 4, 3));
    DecodedImage d = decode_image(at("rgb.png"));
    QCOMPARE(d.width, int64_t{5});
    QCOMPARE(d.height, int64_t{4});
    QCOMPARE(d.channels, int64_t{3});
    QVERIFY(d.pixels == pattern(5, 4, 3));
    write_png(at("grey.png"), 3, 2, 1, pattern(3, 2, 1));
    d = decode_image(at("grey.png"));
    QCOMPARE(d.channels, int64_t{1});
    QVERIFY(d.pixels == pattern(3, 2, 1));
    // Alpha is composited on black.
    std::vector<uint8_t> rgba{200, 100, 50, 255, 200, 100, 50, 0};
    write_png(at("alpha.png"), 2, 1, 4, rgba);
    d = decode_image(at("alpha.png"));
    QCOMPARE(d.channels, int64_t{3});
    QVERIFY((d.pixels == std::vector<uint8_t>{200, 100, 50, 0, 0, 0}));
    // JPEG, whatever the file is called; quality 100 keeps a flat image within a step or two.
    std::vector<uint8_t> flat(16 * 16 * 3);
    for (size_t i = 0; i < flat.size(); ++i) flat[i] = i % 3 == 0 ? 180 : i % 3 == 1 ? 60 : 20;
    write_jpeg(at("photo.png"), 16, 16, 3, flat);
    d = decode_image(at("photo.png"));
    QCOMPARE(d.channels, int64_t{3});
    QCOMPARE(d.width, int64_t{16});
    for (size_t i = 0; i < flat.size(); ++i) QVERIFY(std::abs(d.pixels[i] - flat[i]) <= 3);
    write_jpeg(at("grey.jpg"), 8, 8, 1, std::vector<uint8_t>(64, 128));
    QCOMPARE(decode_image(at("grey.jpg")).channels, int64_t{1});
  }

  void damagedFilesAreNamed() {
    QString why = usage_error([&] { decode_image(at("absent.png")); });
    QVERIFY2(why.startsWith(QString::fromStdString(at("absent.png") + ": No such file")),
             qPrintable(why));
    std::ofstream(at("empty.png")).close();
    why = usage_error([&] { decode_image(at("empty.png")); });
    QVERIFY2(why.contains("the file is empty"), qPrintable(why));
    std::ofstream(at("text.jpg")) << "hello, not an image\n";
    why = usage_error([&] { decode_image(at("text.jpg")); });
    QVERIFY2(
        why.contains(QString::fromStdString(at("text.jpg") + ": neither a PNG nor a JPEG image")),
        qPrintable(why));
    write_png(at("cut.png"), 64, 64, 3, pattern(64, 64, 3));
    cut(at("cut.png"), file_size(at("cut.png")) / 2);
    why = usage_error([&] { decode_image(at("cut.png")); });
    QVERIFY2(why.contains(QString::fromStdString(at("cut.png") + ": a damaged or truncated PNG")),
             qPrintable(why));
    write_jpeg(at("cut.jpg"), 64, 64, 3, pattern(64, 64, 3));
    cut(at("cut.jpg"), file_size(at("cut.jpg")) / 2);
    why = usage_error([&] { decode_image(at("cut.jpg")); });
    QVERIFY2(why.contains(QString::fromStdString(at("cut.jpg") + ": a damaged or truncated JPEG")),
             qPrintable(why));
  }

  // A header can announce far more pixels than its file holds, or than an
  // image should have: refused before the pixels are allocated.
  void hugeImagesAreRefusedBeforeTheirPixels() {
    write_png(at("huge.png"), 4, 4, 1, pattern(4, 4, 1));
    std::string png = bytes_of(at("huge.png"));
    put_be32(png, 16, 100000);  // IHDR's width and height, then its CRC over type and data
    put_be32(png, 20, 100000);
    put_be32(png, 29,
             static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17)));
    std::ofstream(at("huge.png"), std::ios::binary) << png;
    QString why = usage_error([&] { decode_image(at("huge.png")); });
    QVERIFY2(
        why.contains(QString::fromStdString(at("huge.png") +
                                            ": a damaged or truncated PNG (its header announces "
                                            "100000x100000 pixels, more than its " +
                                            std::to_string(png.size()) + " bytes can hold)")),
        qPrintable(why));

    write_jpeg(at("huge.jpg"), 8, 8, 1, std::vector<uint8_t>(64, 128));
    std::string jpg = bytes_of(at("huge.jpg"));
    const size_t sof = jpg.find("\xFF\xC0");
    QVERIFY(sof != std::string::npos);
    jpg[sof + 5] = jpg[sof + 7] = '\x4E';  // height and width 20000 (0x4E20)
    jpg[sof + 6] = jpg[sof + 8] = '\x20';
    std::ofstream(at("huge.jpg"), std::ios::binary) << jpg;
    why = usage_error([&] { decode_image(at("huge.jpg")); });
    QVERIFY2(why.contains(QString::fromStdString(
                 at("huge.jpg") +
                 ": the JPEG is 20000x20000 pixels, more than the 134217728 an image may have")),
             qPrintable(why));
  }

  void fitsChannelsAndSize() {
    DecodedImage rgb{2, 1, 3, {10, 20, 30, 255, 0, 0}};
    std::vector<uint8_t> out(2);
    fit_image(rgb, 1, 2, 1, out.data());
    QVERIFY((out == std::vector<uint8_t>{18, 76}));  // 0.299 R + 0.587 G + 0.114 B
    DecodedImage grey{1, 1, 1, {77}};
    out.assign(3, 0);
    fit_image(grey, 1, 1, 3, out.data());
    QVERIFY((out == std::vector<uint8_t>{77, 77, 77}));
    // Bilinear between pixel centres: [0, 100] to four samples.
    DecodedImage row{2, 1, 1, {0, 100}};
    out.assign(4, 0);
    fit_image(row, 1, 4, 1, out.data());
    QVERIFY2((out == std::vector<uint8_t>{0, 25, 75, 100}),
             qPrintable(QString("%1 %2 %3 %4").arg(out[0]).arg(out[1]).arg(out[2]).arg(out[3])));
    // Shrinking 4 -> 2 averages each pair.
    DecodedImage four{4, 1, 1, {0, 100, 200, 250}};
    out.assign(2, 0);
    fit_image(four, 1, 2, 1, out.data());
    QVERIFY((out == std::vector<uint8_t>{50, 225}));
  }

  void foldersBecomeClassesAndTheCacheIsReused() {
    images({"f1/train/dog/1.png", "f1/train/dog/2.jpg", "f1/train/cat/1.png", "f1/train/ant/x.JPEG",
            "f1/val/cat/v.png", "f1/val/dog/w.jpg"});
    std::ofstream(at("f1/train/dog/notes.txt")) << "not an image";
    ImageFolderOptions o;
    o.train_dir = at("f1/train");
    o.val_dir = at("f1/val");
    o.height = 3;
    o.width = 4;
    o.channels = 1;
    o.threads = 2;
    ImageFolderSource a(o);
    QCOMPARE(a.class_names(), (std::vector<std::string>{"ant", "cat", "dog"}));
    QCOMPARE(a.size(Split::Train), int64_t{4});
    QCOMPARE(a.size(Split::Val), int64_t{2});
    QCOMPARE(a.sample_shape(), (Shape{1, 3, 4, 1}));
    QCOMPARE(a.label(Split::Train, 0), int32_t{0});  // ant/x.JPEG
    QCOMPARE(a.label(Split::Train, 3), int32_t{2});  // dog/2.jpg
    QCOMPARE(a.label(Split::Val, 0), int32_t{1});    // val/cat
    QVERIFY(!a.from_cache());
    QVERIFY(std::filesystem::exists(a.cache_path()));
    // The fitted pixels are those of decoding and fitting by hand.
    std::vector<uint8_t> want(12), got(12);
    fit_image(decode_image(at("f1/train/cat/1.png")), 3, 4, 1, want.data());
    a.read(Split::Train, 1, got.data());
    QVERIFY(got == want);
    // A second load reads the cache: the same samples.
    ImageFolderSource b(o);
    QVERIFY(b.from_cache());
    QVERIFY(b.describe().find("read from the decoded cache") != std::string::npos);
    for (int64_t i = 0; i < b.size(Split::Train); ++i) {
      b.read(Split::Train, i, got.data());
      a.read(Split::Train, i, want.data());
      QVERIFY(got == want);
      QCOMPARE(b.label(Split::Train, i), a.label(Split::Train, i));
    }
    // Another input size has its own cache; a changed image invalidates it.
    o.channels = 3;
    QVERIFY(!ImageFolderSource(o).from_cache());
    o.channels = 1;
    images({"f1/train/cat/1.png"});  // rewritten with other pixels
    std::filesystem::last_write_time(
        at("f1/train/cat/1.png"),
        std::filesystem::file_time_type::clock::now() + std::chrono::seconds(5));
    ImageFolderSource c(o);
    QVERIFY(!c.from_cache());
    fit_image(decode_image(at("f1/train/cat/1.png")), 3, 4, 1, want.data());
    c.read(Split::Train, 1, got.data());
    QVERIFY(got == want);
    // A damaged cache is decoded again, never trusted.
    cut(c.cache_path(), file_size(c.cache_path()) - 3);
    QVERIFY(!ImageFolderSource(o).from_cache());
  }

  void wrongFoldersAreNamed() {
    auto scan = [&](const std::string& t, const std::string& v) {
      return usage_error([&] { scan_image_folders(at(t), at(v)); });
    };
    QString why = usage_error([&] { scan_image_folders("", at("nowhere")); });
    QVERIFY2(why.startsWith("no training folder is set; choose one with a subfolder per class"),
             qPrintable(why));
    why = scan("nowhere", "nowhere");
    QVERIFY2(why.contains(QString::fromStdString("the training folder " + at("nowhere") +
                                                 " does not exist")),
             qPrintable(why));
    std::filesystem::create_directories(at("f2/train"));
    std::ofstream(at("f2/train/loose.png")) << "x";
    why = scan("f2/train", "f2/train");
    QVERIFY2(why.contains("has no class folders; expected one subfolder per class"),
             qPrintable(why));
    images({"f2/train/a/1.png", "f2/val/a/1.png", "f2/val/zebra/1.png"});
    std::filesystem::create_directories(at("f2/train/b"));
    why = scan("f2/train", "f2/val");
    QVERIFY2(
        why.contains(QString::fromStdString(at("f2/train/b") + " holds no PNG or JPEG images")),
        qPrintable(why));
    images({"f2/train/b/1.jpg"});
    why = scan("f2/train", "f2/val");
    QVERIFY2(why.contains(QString::fromStdString(at("f2/val/zebra") +
                                                 ": a validation class the training folder " +
                                                 at("f2/train") + " lacks (its classes: a, b)")),
             qPrintable(why));
  }

  // Images to classify in class folders: a folder is named as its class or
  // as a folder can spell it ("T-shirt/top" has a '/'), so a model's own
  // class names label them; a form two classes share tells neither.
  void classFoldersMayUseTheFolderForm() {
    QCOMPARE(class_folder_form("T-shirt/top"), std::string("t-shirt-top"));
    QCOMPARE(class_folder_form("Ankle boot"), std::string("ankle-boot"));
    QCOMPARE(class_folder_form("  Bag!"), std::string("bag"));
    const std::vector<std::string> names{"T-shirt/top", "Ankle boot", "Bag"};
    images({"f5/t-shirt-top/1.png", "f5/Ankle boot/1.png", "f5/ankle_boot/2.png", "f5/Bag/1.png"});
    const std::vector<PredictImage> got = folder_images(at("f5"), names);
    std::map<std::string, int32_t> label;
    for (const PredictImage& image : got)
      label[std::filesystem::path(image.file).parent_path().filename().string()] = image.label;
    QCOMPARE(label.size(), size_t{4});
    QCOMPARE(label["t-shirt-top"], 0);
    QCOMPARE(label["Ankle boot"], 1);
    QCOMPARE(label["ankle_boot"], 1);
    QCOMPARE(label["Bag"], 2);
    images({"f6/Ankle boot/1.png", "f6/ankle_boot/1.png"});
    const QString why = usage_error([&] { folder_images(at("f6"), {"Ankle boot", "ankle-boot"}); });
    QVERIFY2(why.contains("no class of the model is called 'ankle_boot' (its classes: Ankle boot, "
                          "ankle-boot; a folder may spell 'Ankle boot' as 'ankle-boot')"),
             qPrintable(why));
  }

  void unreadableImagesStopTheLoadOrAreLeftOut() {
    images({"f3/train/a/1.png", "f3/train/a/2.png", "f3/train/b/1.png", "f3/val/a/1.png",
            "f3/val/b/1.png"});
    cut(at("f3/train/a/2.png"), 30);
    ImageFolderOptions o;
    o.train_dir = at("f3/train");
    o.val_dir = at("f3/val");
    o.height = o.width = 4;
    o.channels = 3;
    QString why = usage_error([&] { ImageFolderSource s(o); });
    QVERIFY2(why.contains(QString::fromStdString(at("f3/train/a/2.png"))) &&
                 why.contains("\"dataset.on_bad_image\": \"skip\""),
             qPrintable(why));
    o.skip_bad_images = true;
    ImageFolderSource s(o);
    QCOMPARE(s.size(Split::Train), int64_t{2});
    QCOMPARE(s.skipped().size(), size_t{1});
    QVERIFY(s.skipped()[0].find(at("f3/train/a/2.png")) == 0);
    QVERIFY(s.describe().find("1 unreadable image left out") != std::string::npos);
    // The cache keeps what was left out, and says so again.
    ImageFolderSource again(o);
    QVERIFY(again.from_cache());
    QCOMPARE(again.skipped(), s.skipped());
  }

  // The project kind: read and written back, probed, its sizes settled from
  // the folders, loaded, and trained through the command line.
  void imageFolderProjectsTrain() {
    std::vector<std::string> files;
    for (const char* c : {"circle", "cross", "square"})
      for (int i = 0; i < 12; ++i) {
        files.push_back(std::string("f4/train/") + c + "/" + std::to_string(i) +
                        (i % 2 ? ".png" : ".jpg"));
        if (i < 3) files.push_back(std::string("f4/val/") + c + "/" + std::to_string(i) + ".png");
      }
    images(files);
    const std::string text =
        "{\"format\": 1, \"name\": \"shapes\", \"model\": {\"nodes\": [\n"
        "      {\"id\": \"in\", \"type\": \"Input\", \"params\": {\"height\": 6, \"width\": 8, "
        "\"channels\": 3}},\n"
        "      {\"id\": \"conv\", \"type\": \"Conv2d\", \"params\": {\"out_channels\": 4, "
        "\"kernel\": 3, \"padding\": 1}},\n"
        "      {\"id\": \"relu\", \"type\": \"ReLU\"},\n"
        "      {\"id\": \"fc\", \"type\": \"Linear\", \"params\": {\"out_features\": 3}},\n"
        "      {\"id\": \"loss\", \"type\": \"SoftmaxCrossEntropy\"}],\n"
        "      \"edges\": [{\"from\": \"in\", \"to\": \"conv\"}, {\"from\": \"conv\", \"to\": "
        "\"relu\"},\n"
        "                {\"from\": \"relu\", \"to\": \"fc\"}, {\"from\": \"fc\", \"to\": "
        "\"loss\"}]},\n"
        "      \"dataset\": {\"kind\": \"image-folder\", \"train_dir\": \"" +
        at("f4/train") + "\", \"val_dir\": \"" + at("f4/val") +
        "\", \"height\": 6, \"width\": 8, \"channels\": 3, \"classes\": 3,\n"
        "                   \"on_bad_image\": \"skip\", \"mean\": [0.5, 0.5, 0.5], \"std\": [0.25, "
        "0.25, 0.25]},\n"
        "      \"training\": {\"epochs\": 2, \"global_batch\": 8, \"devices\": \"cpu:1\"}}";
    Project p = parse_project(text, "shapes.json");
    QCOMPARE(p.dataset.kind, DatasetKind::ImageFolder);
    QCOMPARE(p.dataset.val_path, at("f4/val"));
    QVERIFY(p.dataset.skip_bad_images);
    QCOMPARE(p.dataset.train_size, int64_t{0});  // counted, not declared
    const std::string back = project_to_json(p);
    QVERIFY2(back.find("\"train_dir\"") != std::string::npos &&
                 back.find("\"on_bad_image\": \"skip\"") != std::string::npos &&
                 back.find("train_size") == std::string::npos,
             back.c_str());
    QCOMPARE(project_to_json(parse_project(back, "shapes.json")), back);
    const DatasetProbe probe = probe_dataset(p.dataset);
    QVERIFY2(probe.ok, probe.problem.c_str());
    QCOMPARE(probe.train_size, int64_t{36});
    QCOMPARE(probe.val_size, int64_t{9});
    QCOMPARE(probe.class_names, (std::vector<std::string>{"circle", "cross", "square"}));
    // The derived validation batch (8) does not split 9 images: 3 does.
    QVERIFY(settle_dataset_sizes(p, probe));
    QCOMPARE(p.dataset.train_size, int64_t{36});
    QCOMPARE(p.variants.back().batch, int64_t{3});
    auto src = load_dataset(p.dataset);
    QCOMPARE(src->size(Split::Val), int64_t{9});
    // More classes than folders: the message says how many to set.
    DatasetSpec wrong = p.dataset;
    wrong.classes = 5;
    const DatasetProbe w = probe_dataset(wrong);
    QVERIFY(!w.ok);
    QCOMPARE(w.field, std::string("dataset.classes"));
    QVERIFY2(w.problem.find("has 3 class folders (circle, cross, square) but \"dataset.classes\" "
                            "is 5: set it to 3") != std::string::npos,
             w.problem.c_str());
    wrong.classes = 3;
    wrong.val_path = at("f4/nowhere");
    QCOMPARE(probe_dataset(wrong).field, std::string("dataset.val_dir"));
    // Parsing refuses what image folders do not have, and wants both folders.
    for (const auto& [edit, field] : std::vector<std::pair<std::string, std::string>>{
             {"\"train_size\": 10, ", "dataset.train_size"},
             {"\"dir\": \"/x\", ", "dataset.dir"}}) {
      std::string t = text;
      t.insert(t.find("\"train_dir\""), edit);
      try {
        parse_project(t, "t.json");
        QFAIL(("accepted " + field).c_str());
      } catch (const ProjectError& e) {
        QVERIFY2(std::string(e.what()).find(field) != std::string::npos, e.what());
      }
    }
    // Trained from the command line: plan, then two epochs with validation.
    const std::string path = at("shapes.json");
    std::ofstream(path) << text;
    QProcess plan;
    plan.start(QStringLiteral(TR_CLI), {"plan", QString::fromStdString(path)});
    QVERIFY(plan.waitForFinished(60000));
    QVERIFY2(plan.exitCode() == 0, plan.readAllStandardError().constData());
    QProcess train;
    train.setProcessChannelMode(QProcess::MergedChannels);
    train.start(QStringLiteral(TR_CLI), {"train", QString::fromStdString(path), "--no-store",
                                         "--checkpoint-dir", QString::fromStdString(at("f4ck"))});
    QVERIFY(train.waitForFinished(120000));
    const QString out = QString::fromUtf8(train.readAll());
    QVERIFY2(train.exitCode() == 0, qPrintable(out));
    QVERIFY2(out.contains("image folders " + QString::fromStdString(at("f4/train"))) &&
                 out.contains("3 classes, 36 train, 9 val") && out.contains("epoch 2/2") &&
                 out.contains("val_top-1"),
             qPrintable(out));
    // predict on the labelled validation folder agrees with the run's own validation.
    const QString val_top1 = out.section("val_top-1 ", -1).section('%', 0, 0);
    auto predict = [&](const QStringList& more) {
      QProcess cli;
      cli.start(QStringLiteral(TR_CLI),
                QStringList{"predict", QString::fromStdString(path), "--checkpoint",
                            QString::fromStdString(at("f4ck/shapes-epoch2.ckpt"))} +
                    more);
      cli.waitForFinished(60000);
      return std::pair{cli.exitCode(), QString::fromUtf8(cli.readAllStandardOutput()) +
                                           QString::fromUtf8(cli.readAllStandardError())};
    };
    auto [code, said] = predict({"--folder", QString::fromStdString(at("f4/val"))});
    QVERIFY2(code == 0, qPrintable(said));
    QVERIFY2(said.contains("accuracy " + val_top1 + "% ("), qPrintable(said + "\nvs " + val_top1));
    QVERIFY2(said.contains("true \\ predicted") && said.contains("circle"), qPrintable(said));
    // Files, as JSON, with an unreadable one among them.
    std::ofstream(at("f4/broken.png")) << "not an image";
    std::tie(code, said) = predict(
        {at("f4/val/cross/1.png").c_str(), at("f4/broken.png").c_str(), "--json", "--top", "2"});
    QVERIFY2(code == 0, qPrintable(said));
    const auto json = nlohmann::json::parse(said.toStdString());
    QCOMPARE(json.size(), size_t{2});
    QCOMPARE(json[0]["file"].get<std::string>(), at("f4/val/cross/1.png"));
    QCOMPARE(json[0]["top2"].size(), size_t{2});
    const double p0 = json[0]["top2"][0]["p"], p1 = json[0]["top2"][1]["p"];
    QVERIFY(p0 >= p1 && p0 + p1 <= 1.0 + 1e-9 && p1 >= 0);
    QVERIFY(json[0]["top2"][0]["class"].is_string());
    QVERIFY(json[1]["error"].get<std::string>().find("neither a PNG nor a JPEG") !=
            std::string::npos);
    QCOMPARE(json[1]["top2"].size(), size_t{0});
    // A class folder the model has no class for.
    images({"f4/other/zebra/1.png"});
    std::tie(code, said) = predict({"--folder", QString::fromStdString(at("f4/other"))});
    QCOMPARE(code, 2);
    QVERIFY2(said.contains("no class of the model is called 'zebra' (its classes: circle, cross, "
                           "square)"),
             qPrintable(said));
    QProcess data;
    data.setProcessChannelMode(QProcess::MergedChannels);
    data.start(QStringLiteral(TR_CLI),
               {"train", QString::fromStdString(path), "--no-store", "--data", "/tmp"});
    QVERIFY(data.waitForFinished(60000));
    QVERIFY2(data.exitCode() == 2 && data.readAll().contains("--data names the folder of"),
             "--data is refused for image folders");
  }
};

QTEST_GUILESS_MAIN(TestImageFolder)
#include "test_image_folder.moc"
