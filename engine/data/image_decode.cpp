// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/image_decode.h"

#include <png.h>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <cstddef>
#include <cstdio>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include <renaissance/error.h>

namespace tr {

namespace {

enum class Format { PNG, JPEG, Other };

// Larger images are refused before anything is allocated for them (16384 x
// 8192, 402 MB of RGB): a damaged header, or a small file that decompresses
// to gigabytes, must fail with a message rather than exhaust the memory.
constexpr uint64_t kMaxPixels = uint64_t{1} << 27;

void check_size(const std::string& path, const char* format, uint64_t width, uint64_t height) {
  if (width * height <= kMaxPixels) return;
  throw UsageError(path + ": the " + format + " is " + std::to_string(width) + "x" +
                   std::to_string(height) + " pixels, more than the " + std::to_string(kMaxPixels) +
                   " an image may have (a damaged header, or an image to scale down first)");
}

Format sniff(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UsageError(path + ": " + std::strerror(errno));
  unsigned char head[8] = {};
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n == 8 && std::memcmp(head, kPng, 8) == 0) return Format::PNG;
  if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return Format::JPEG;
  if (n == 0) throw UsageError(path + ": the file is empty; expected a PNG or JPEG image");
  return Format::Other;
}

DecodedImage decode_png(const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw UsageError(path + ": not a readable PNG (" + image.message + ")");
  // Deflate packs at most 1032 bytes into one, and a PNG's pixels take at
  // least a bit each: a header announcing more is damaged (or the file cut
  // short), whatever its data would say.
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  const uint64_t pixels = uint64_t{image.width} * image.height;
  if (!ec && pixels / 8 / 1032 > file_bytes) {
    png_image_free(&image);
    throw UsageError(path + ": a damaged or truncated PNG (its header announces " +
                     std::to_string(image.width) + "x" + std::to_string(image.height) +
                     " pixels, more than its " + std::to_string(file_bytes) + " bytes can hold)");
  }
  if (pixels > kMaxPixels) {
    png_image_free(&image);
    check_size(path, "PNG", image.width, image.height);
  }
  const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  image.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  DecodedImage d;
  d.width = image.width;
  d.height = image.height;
  d.channels = colour ? 3 : 1;
  d.pixels.resize(PNG_IMAGE_SIZE(image));
  png_color black{0, 0, 0};
  if (!png_image_finish_read(&image, &black, d.pixels.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    throw UsageError(path + ": a damaged or truncated PNG (" + why + ")");
  }
  return d;
}

// libjpeg reports errors through a callback that must not return: it jumps
// back to decode_jpeg. Warnings (a file cut short is one) count as errors,
// and end the decoding at once: a damaged file that announces a huge image
// is not decoded to its end first.
struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf back;
  char message[JMSG_LENGTH_MAX] = {};
  bool warned = false;
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->back, 1);
}

void jpeg_message(j_common_ptr c, int level) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  if (level < 0) {
    (*c->err->format_message)(c, e->message);
    e->warned = true;
    std::longjmp(e->back, 1);
  }
}

DecodedImage decode_jpeg(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UsageError(path + ": " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(f, &std::fclose);
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = &jpeg_fail;
  errors.mgr.emit_message = &jpeg_message;
  // Everything setjmp returns to must not have changed since: the result
  // lives in a heap object the pointer (set before) owns.
  auto d = std::make_unique<DecodedImage>();
  if (setjmp(errors.back)) {
    jpeg_destroy_decompress(&info);
    throw UsageError(path +
                     (errors.warned ? ": a damaged or truncated JPEG (" : ": a damaged JPEG (") +
                     errors.message + ")");
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, f);
  jpeg_read_header(&info, TRUE);
  const bool grey = info.jpeg_color_space == JCS_GRAYSCALE;
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    throw UsageError(path + ": a CMYK JPEG; expected a grey or colour (RGB/YCbCr) one");
  }
  if (uint64_t{info.image_width} * info.image_height > kMaxPixels) {
    jpeg_destroy_decompress(&info);
    check_size(path, "JPEG", info.image_width, info.image_height);
  }
  info.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  d->width = info.output_width;
  d->height = info.output_height;
  d->channels = info.output_components;
  // The pixels grow with the rows decoded (doubling, up to the whole
  // image): a file that ends early has cost only what it held.
  const size_t row_bytes = static_cast<size_t>(d->width * d->channels);
  const size_t all_bytes = row_bytes * static_cast<size_t>(d->height);
  while (info.output_scanline < info.output_height) {
    const size_t at = static_cast<size_t>(info.output_scanline) * row_bytes;
    if (d->pixels.capacity() < at + row_bytes)
      d->pixels.reserve(std::min(all_bytes, std::max(at + row_bytes, 2 * d->pixels.capacity())));
    d->pixels.resize(at + row_bytes);
    JSAMPROW row = d->pixels.data() + at;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return std::move(*d);
}

uint8_t luma(const uint8_t* rgb) {
  return static_cast<uint8_t>(std::lround(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]));
}

}  // namespace

DecodedImage decode_image(const std::string& path) {
  switch (sniff(path)) {
    case Format::PNG:
      return decode_png(path);
    case Format::JPEG:
      return decode_jpeg(path);
    case Format::Other:
      break;
  }
  throw UsageError(path + ": neither a PNG nor a JPEG image (by its first bytes)");
}

void fit_image(const DecodedImage& in, int64_t height, int64_t width, int64_t channels,
               uint8_t* out) {
  // The channels first, at the source size.
  std::vector<uint8_t> converted;
  const uint8_t* src = in.pixels.data();
  if (in.channels != channels) {
    const int64_t n = in.width * in.height;
    converted.resize(static_cast<size_t>(n * channels));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < channels; ++c)
        converted[static_cast<size_t>(i * channels + c)] =
            in.channels == 3 ? luma(src + i * 3) : src[i];
    src = converted.data();
  }
  if (in.width == width && in.height == height) {
    std::copy(src, src + width * height * channels, out);
    return;
  }
  const double sy = static_cast<double>(in.height) / static_cast<double>(height);
  const double sx = static_cast<double>(in.width) / static_cast<double>(width);
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::clamp((static_cast<double>(y) + 0.5) * sy - 0.5, 0.0,
                                 static_cast<double>(in.height - 1));
    const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, in.height - 1);
    const double wy = fy - static_cast<double>(y0);
    for (int64_t x = 0; x < width; ++x) {
      const double fx = std::clamp((static_cast<double>(x) + 0.5) * sx - 0.5, 0.0,
                                   static_cast<double>(in.width - 1));
      const int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, in.width - 1);
      const double wx = fx - static_cast<double>(x0);
      for (int64_t c = 0; c < channels; ++c) {
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(src[(yy * in.width + xx) * channels + c]);
        };
        const double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                         wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        out[(y * width + x) * channels + c] = static_cast<uint8_t>(std::lround(v));
      }
    }
  }
}

}  // namespace tr
