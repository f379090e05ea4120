// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <renaissance/error.h>
#include "data/image_decode.h"

namespace tr {

namespace fs = std::filesystem;

namespace {

constexpr char kCacheMagic[8] = {'R', 'W', 'B', 'I', 'M', 'G', 'C', '\n'};
constexpr uint32_t kCacheFormat = 1;  // bump when decoding or fitting changes

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

// The subfolders of `dir`, sorted; throws when `dir` is not a folder.
std::vector<std::string> class_folders(const std::string& dir, const char* what) {
  if (dir.empty())
    throw UsageError("no " + std::string(what) +
                     " folder is set; choose one with a subfolder per class, each holding that "
                     "class's PNG or JPEG images");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UsageError("the " + std::string(what) + " folder " + dir + " " +
                     (fs::exists(dir, ec) ? "is not a folder" : "does not exist"));
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !hidden(e.path())) out.push_back(e.path().filename().string());
  if (ec) throw UsageError(dir + ": cannot be listed (" + ec.message() + ")");
  std::sort(out.begin(), out.end());
  if (out.empty())
    throw UsageError("the " + std::string(what) + " folder " + dir +
                     " has no class folders; expected one subfolder per class, each holding "
                     "that class's PNG or JPEG images");
  return out;
}

void add_images(const std::string& dir, int32_t label, std::vector<ImageFile>& out) {
  const std::vector<std::string> files = image_files_in(dir);
  if (files.empty())
    throw UsageError(dir + " holds no PNG or JPEG images (files ending .png, .jpg or .jpeg)");
  for (const std::string& path : files) {
    std::error_code ec;
    ImageFile f;
    f.path = path;
    f.label = label;
    f.bytes = fs::file_size(path, ec);
    f.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     fs::last_write_time(path, ec).time_since_epoch())
                     .count();
    out.push_back(std::move(f));
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// FNV-1a, 64 bits.
struct Hash {
  uint64_t h = 14695981039346656037ull;
  void bytes(const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
};

}  // namespace

std::vector<std::string> image_files_in(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && !hidden(e.path()) && is_image_name(e.path()))
      out.push_back(e.path().string());
  if (ec) throw UsageError(dir + ": cannot be listed (" + ec.message() + ")");
  std::sort(out.begin(), out.end());
  return out;
}

ImageFolderScan scan_training_folder(const std::string& train_dir) {
  ImageFolderScan s;
  s.classes = class_folders(train_dir, "training");
  for (size_t c = 0; c < s.classes.size(); ++c)
    add_images((fs::path(train_dir) / s.classes[c]).string(), static_cast<int32_t>(c), s.train);
  return s;
}

void scan_validation_folder(ImageFolderScan& s, const std::string& train_dir,
                            const std::string& val_dir) {
  for (const std::string& name : class_folders(val_dir, "validation")) {
    const auto it = std::find(s.classes.begin(), s.classes.end(), name);
    if (it == s.classes.end())
      throw UsageError((fs::path(val_dir) / name).string() +
                       ": a validation class the training folder " + train_dir +
                       " lacks (its classes: " + joined(s.classes) + ")");
    add_images((fs::path(val_dir) / name).string(), static_cast<int32_t>(it - s.classes.begin()),
               s.val);
  }
}

ImageFolderScan scan_image_folders(const std::string& train_dir, const std::string& val_dir) {
  ImageFolderScan s = scan_training_folder(train_dir);
  scan_validation_folder(s, train_dir, val_dir);
  return s;
}

ImageFolderSource::ImageFolderSource(const ImageFolderOptions& options) : options_(options) {
  if (options_.height < 1 || options_.width < 1 ||
      (options_.channels != 1 && options_.channels != 3))
    throw std::invalid_argument("ImageFolderSource: the input must be HxWx1 or HxWx3");
  scan_ = scan_image_folders(options_.train_dir, options_.val_dir);
  if (options_.cache && read_cache()) {
    from_cache_ = true;
    return;
  }
  decode_all();
  if (options_.cache) write_cache();
}

void ImageFolderSource::decode_all() {
  const int64_t per = options_.height * options_.width * options_.channels;
  std::vector<const ImageFile*> files;
  for (const ImageFile& f : scan_.train) files.push_back(&f);
  for (const ImageFile& f : scan_.val) files.push_back(&f);
  std::vector<uint8_t> pixels(files.size() * static_cast<size_t>(per));
  std::vector<std::string> errors(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        fit_image(decode_image(files[i]->path), options_.height, options_.width, options_.channels,
                  pixels.data() + i * static_cast<size_t>(per));
      } catch (const UsageError& e) {
        errors[i] = e.what();
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t n =
      std::min<size_t>(options_.threads > 0 ? static_cast<size_t>(options_.threads) : hw,
                       std::max<size_t>(1, files.size()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < files.size(); ++i)
    if (!errors[i].empty() && !options_.skip_bad_images)
      throw UsageError(errors[i] +
                       "; fix or remove the file, or set \"dataset.on_bad_image\": "
                       "\"skip\" to leave such images out");
  for (size_t i = 0; i < files.size(); ++i) {
    if (!errors[i].empty()) {
      skipped_.push_back(errors[i]);
      continue;
    }
    SplitData& d = i < scan_.train.size() ? train_ : val_;
    d.labels.push_back(files[i]->label);
    d.pixels.insert(d.pixels.end(), pixels.begin() + static_cast<std::ptrdiff_t>(i * per),
                    pixels.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
  }
  if (train_.labels.empty() || val_.labels.empty())
    throw UsageError("every image of the " +
                     std::string(train_.labels.empty() ? "training folder " + options_.train_dir
                                                       : "validation folder " + options_.val_dir) +
                     " is unreadable: " + skipped_.front());
}

std::string ImageFolderSource::cache_path() const {
  const fs::path dir = fs::absolute(fs::path(options_.train_dir).lexically_normal());
  const fs::path base = dir.filename().empty() ? dir.parent_path() : dir;
  return (base.parent_path() /
          ("." + base.filename().string() + ".rwbcache-" + std::to_string(options_.height) + "x" +
           std::to_string(options_.width) + "x" + std::to_string(options_.channels)))
      .string();
}

uint64_t ImageFolderSource::signature() const {
  Hash h;
  h.value(kCacheFormat);
  h.value(options_.height);
  h.value(options_.width);
  h.value(options_.channels);
  h.value(options_.skip_bad_images);
  for (const std::string& c : scan_.classes) h.text(c);
  for (const std::vector<ImageFile>* split : {&scan_.train, &scan_.val}) {
    h.value(split->size());
    for (const ImageFile& f : *split) {
      h.text(f.path);
      h.value(f.label);
      h.value(f.bytes);
      h.value(f.mtime_ns);
    }
  }
  return h.h;
}

bool ImageFolderSource::read_cache() {
  std::ifstream in(cache_path(), std::ios::binary);
  if (!in) return false;
  char magic[8];
  uint32_t format = 0;
  uint64_t sig = 0;
  int64_t counts[3] = {0, 0, 0};
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&format), sizeof format);
  in.read(reinterpret_cast<char*>(&sig), sizeof sig);
  in.read(reinterpret_cast<char*>(counts), sizeof counts);
  if (!in || std::memcmp(magic, kCacheMagic, 8) != 0 || format != kCacheFormat ||
      sig != signature() || counts[0] < 1 || counts[1] < 1 || counts[2] < 0 ||
      counts[0] > static_cast<int64_t>(scan_.train.size()) ||
      counts[1] > static_cast<int64_t>(scan_.val.size()))
    return false;
  std::vector<std::string> skipped;
  for (int64_t i = 0; i < counts[2]; ++i) {
    uint32_t n = 0;
    in.read(reinterpret_cast<char*>(&n), sizeof n);
    if (!in || n > (1u << 16)) return false;
    std::string s(n, '\0');
    in.read(s.data(), n);
    skipped.push_back(std::move(s));
  }
  const int64_t per = options_.height * options_.width * options_.channels;
  SplitData t, v;
  for (auto [d, n] : {std::pair{&t, counts[0]}, std::pair{&v, counts[1]}}) {
    d->labels.resize(static_cast<size_t>(n));
    in.read(reinterpret_cast<char*>(d->labels.data()), n * static_cast<int64_t>(sizeof(int32_t)));
  }
  for (auto [d, n] : {std::pair{&t, counts[0]}, std::pair{&v, counts[1]}}) {
    d->pixels.resize(static_cast<size_t>(n * per));
    in.read(reinterpret_cast<char*>(d->pixels.data()), n * per);
  }
  if (!in || in.peek() != std::char_traits<char>::eof()) return false;
  for (const SplitData* d : {&t, &v})
    for (int32_t l : d->labels)
      if (l < 0 || l >= classes()) return false;
  train_ = std::move(t);
  val_ = std::move(v);
  skipped_ = std::move(skipped);
  return true;
}

void ImageFolderSource::write_cache() const {
  // Through a temporary file and a rename: a run killed meanwhile leaves the
  // old cache or none, never a torn one. A folder we cannot write to only
  // costs the next run the decoding.
  const std::string path = cache_path(), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    const uint64_t sig = signature();
    const int64_t counts[3] = {static_cast<int64_t>(train_.labels.size()),
                               static_cast<int64_t>(val_.labels.size()),
                               static_cast<int64_t>(skipped_.size())};
    out.write(kCacheMagic, 8);
    out.write(reinterpret_cast<const char*>(&kCacheFormat), sizeof kCacheFormat);
    out.write(reinterpret_cast<const char*>(&sig), sizeof sig);
    out.write(reinterpret_cast<const char*>(counts), sizeof counts);
    for (const std::string& s : skipped_) {
      const auto n = static_cast<uint32_t>(std::min<size_t>(s.size(), 1u << 16));
      out.write(reinterpret_cast<const char*>(&n), sizeof n);
      out.write(s.data(), n);
    }
    for (const SplitData* d : {&train_, &val_})
      out.write(reinterpret_cast<const char*>(d->labels.data()),
                static_cast<std::streamsize>(d->labels.size() * sizeof(int32_t)));
    for (const SplitData* d : {&train_, &val_})
      out.write(reinterpret_cast<const char*>(d->pixels.data()),
                static_cast<std::streamsize>(d->pixels.size()));
    if (!out.flush()) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

int64_t ImageFolderSource::size(Split split) const {
  return static_cast<int64_t>(data(split).labels.size());
}

void ImageFolderSource::read(Split split, int64_t index, uint8_t* out_hwc) const {
  if (index < 0 || index >= size(split))
    throw std::out_of_range("ImageFolderSource: " + std::string(split_name(split)) + " index " +
                            std::to_string(index) + " outside [0, " + std::to_string(size(split)) +
                            ")");
  const int64_t per = options_.height * options_.width * options_.channels;
  const uint8_t* p = data(split).pixels.data() + index * per;
  std::copy(p, p + per, out_hwc);
}

int32_t ImageFolderSource::label(Split split, int64_t index) const {
  if (index < 0 || index >= size(split))
    throw std::out_of_range("ImageFolderSource: label index outside the split");
  return data(split).labels[static_cast<size_t>(index)];
}

std::string ImageFolderSource::describe() const {
  std::string s = "image folders " + options_.train_dir + " and " + options_.val_dir + " (" +
                  std::to_string(classes()) + " classes, " + std::to_string(size(Split::Train)) +
                  " train, " + std::to_string(size(Split::Val)) + " val, fitted to " +
                  std::to_string(options_.height) + "x" + std::to_string(options_.width) + "x" +
                  std::to_string(options_.channels) +
                  (from_cache_ ? ", read from the decoded cache" : "") + ")";
  if (!skipped_.empty())
    s += "; " + std::to_string(skipped_.size()) + " unreadable image" +
         (skipped_.size() == 1 ? "" : "s") + " left out, the first: " + skipped_.front();
  return s;
}

}  // namespace tr
