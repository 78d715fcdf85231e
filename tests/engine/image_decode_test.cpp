// Decoding and checking one image file (issue 31): every format's header is
// read without decoding, bad files are refused with their fault before the
// decoder sees them, and the pictures come out in the Input's channels.
// The PNGs are written here (zlib), the other formats are fixtures in
// tests/data/fixtures (made by make_fixtures.cpp there).
#include <deepcanvas/image_data.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef DC_TEST_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;
using Bytes = std::string;

void put32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b += char((v >> s) & 0xFF);
}

void chunk(Bytes& b, const char* type, const Bytes& data) {
  put32(b, uint32_t(data.size()));
  const Bytes td = Bytes(type, 4) + data;
  b += td;
  put32(b, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(td.data()), uInt(td.size()))));
}

// A PNG of w×h pixels: `px` holds the rows without filter bytes.
Bytes png(uint32_t w, uint32_t h, int depth, int colour, const Bytes& px,
          const Bytes& palette = "") {
  Bytes b("\x89PNG\r\n\x1a\n", 8), ihdr;
  put32(ihdr, w);
  put32(ihdr, h);
  ihdr += char(depth);
  ihdr += char(colour);
  ihdr += Bytes(3, '\0');
  chunk(b, "IHDR", ihdr);
  if (!palette.empty()) chunk(b, "PLTE", palette);
  if (!px.empty()) {  // no IDAT: a header-only file (the 60000×60000 one)
    const size_t row = px.size() / h;
    Bytes raw;
    for (uint32_t y = 0; y < h; ++y) raw += '\0' + px.substr(y * row, row);
    uLongf n = compressBound(uLong(raw.size()));
    Bytes z(n, '\0');
    compress(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
             uLong(raw.size()));
    z.resize(n);
    chunk(b, "IDAT", z);
  }
  chunk(b, "IEND", "");
  return b;
}

Bytes fixture(const std::string& name) {
  std::ifstream f(std::string(DC_SOURCE_DIR) + "/tests/data/fixtures/" + name, std::ios::binary);
  EXPECT_TRUE(f) << name;
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

const uint8_t* u8(const Bytes& b) {
  return reinterpret_cast<const uint8_t*>(b.data());
}

ImageHeader sniff(const Bytes& b) {
  return sniff_image(u8(b), b.size(), "x");
}

// The fault sniff_image, check_image_file and decode_image all give for
// these bytes (Unreadable: none).
void expect_fault(const Bytes& b, ImageFault f, const std::string& words = "") {
  test::TmpDir t;
  const std::string p = t.write("file.png", b);
  auto check = [&](const char* who, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << who << " accepted the file; expected " << fault_name(f);
    } catch (const ImageError& e) {
      EXPECT_EQ(int(e.fault()), int(f)) << who << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  check("sniff_image", [&] { sniff(b); });
  check("check_image_file", [&] { check_image_file(p); });
  check("decode_image", [&] { decode_image(p, 3); });
}

Bytes rgb_px(std::initializer_list<int> v) {
  Bytes b;
  for (int x : v) b += char(x);
  return b;
}

TEST(ImageSniff, ReadsEachFormatsSizeFromItsHeader) {
  const Bytes p = png(5, 3, 8, 2, Bytes(45, '\x40'));
  EXPECT_EQ(sniff(p).format, "png");
  EXPECT_EQ(sniff(p).w, 5);
  EXPECT_EQ(sniff(p).h, 3);
  struct F {
    const char* file;
    const char* format;
    int w, h;
  };
  for (const F& f : {F{"corner_32x16.jpg", "jpeg", 32, 16}, F{"cmyk_16x16.jpg", "jpeg", 16, 16},
                     F{"quad_8x6.bmp", "bmp", 8, 6}, F{"quad_8x6.tiff", "tiff", 8, 6},
                     F{"quad_8x6.ppm", "pnm", 8, 6}, F{"quad_8x6.pgm", "pnm", 8, 6},
                     F{"quad_8x6_lossless.webp", "webp", 8, 6},  // VP8L
                     F{"quad_8x6_lossy.webp", "webp", 8, 6},     // VP8
                     F{"quad_8x6_alpha.webp", "webp", 8, 6}}) {  // VP8X
    const ImageHeader h = sniff(fixture(f.file));
    EXPECT_EQ(h.format, f.format) << f.file;
    EXPECT_EQ(h.w, f.w) << f.file;
    EXPECT_EQ(h.h, f.h) << f.file;
    EXPECT_EQ(check_image_file(std::string(DC_SOURCE_DIR) + "/tests/data/fixtures/" + f.file).w,
              f.w);
  }
  // A big-endian TIFF, its width a LONG and its height a SHORT.
  Bytes t("MM\0*", 4);
  put32(t, 8);
  t += Bytes("\0\2", 2);
  t += Bytes("\1\0\0\4\0\0\0\1", 8);
  put32(t, 70000);
  t += Bytes("\1\1\0\3\0\0\0\1\0\x2a\0\0", 12);
  put32(t, 0);
  EXPECT_EQ(sniff(t).format, "tiff");
  EXPECT_EQ(sniff(t).w, 70000);
  EXPECT_EQ(sniff(t).h, 42);
}

TEST(ImageSniff, ReadsWhetherAPictureIsGreyOrColour) {
  // PNG colour types: 0 grey, 4 grey + alpha; 2 RGB, 3 palette, 6 RGBA.
  for (int type : {0, 4}) EXPECT_EQ(sniff(png(2, 2, 8, type, "")).channels, 1) << type;
  for (int type : {2, 3, 6}) EXPECT_EQ(sniff(png(2, 2, 8, type, "")).channels, 3) << type;
  for (const char* f :
       {"corner_32x16.jpg", "cmyk_16x16.jpg", "quad_8x6.bmp", "quad_8x6.tiff", "quad_8x6.ppm",
        "quad_8x6_lossless.webp", "quad_8x6_lossy.webp", "quad_8x6_alpha.webp"})
    EXPECT_EQ(sniff(fixture(f)).channels, 3) << f;
  EXPECT_EQ(sniff(fixture("quad_8x6.pgm")).channels, 1);
  // A grey JPEG: SOI, a baseline frame header of one component, EOI.
  const Bytes grey_jpeg("\xff\xd8\xff\xc0\x00\x0b\x08\x00\x10\x00\x20\x01\x01\x11\x00\xff\xd9", 17);
  const ImageHeader g = sniff(grey_jpeg);
  EXPECT_EQ(g.w, 32);
  EXPECT_EQ(g.h, 16);
  EXPECT_EQ(g.channels, 1);
}

TEST(ImageSniff, PictureNoteSaysWhatTheFilesHoldBesideTheInput) {
  auto headers = [](int n, int64_t w, int64_t h, int channels) {
    ImageHeader x;
    x.w = w;
    x.h = h;
    x.channels = channels;
    return std::vector<ImageHeader>(size_t(n), x);
  };
  // Colour photos for a small grey Input: both pieces of advice.
  std::vector<ImageHeader> photos = headers(10, 400, 300, 3);
  photos.push_back({});  // a bad file's empty header counts for nothing
  std::string n = picture_note(photos, Shape{1, 28, 28});
  EXPECT_EQ(n.rfind("about 400×300 px, in colour (the median of 10 files' headers)", 0), 0u) << n;
  EXPECT_NE(n.find("set the Input layer's channels to 3"), std::string::npos) << n;
  EXPECT_NE(n.find("at 28×28 px the Input keeps little of their detail"), std::string::npos) << n;
  EXPECT_EQ(suggested_input(photos, Shape{1, 28, 28}), (Shape{3, 64, 64}));
  // Each piece of advice alone changes only its part of the shape.
  EXPECT_EQ(suggested_input(photos, Shape{1, 96, 80}), (Shape{3, 96, 80}));
  EXPECT_EQ(suggested_input(photos, Shape{3, 32, 32}), (Shape{3, 64, 64}));
  // The same photos for a colour transfer Input at 224 px: no advice.
  EXPECT_EQ(suggested_input(photos, Shape{3, 224, 224}).rank(), 0u);
  n = picture_note(photos, Shape{3, 224, 224});
  EXPECT_EQ(n, "about 400×300 px, in colour (the median of 10 files' headers)");
  // Grey scans for a grey Input of about their size: none either.
  EXPECT_EQ(picture_note(headers(5, 28, 28, 1), Shape{1, 28, 28}),
            "about 28×28 px, grey (the median of 5 files' headers)");
  // Mostly grey with a few colour files: counted, no channel advice.
  std::vector<ImageHeader> mixed = headers(6, 64, 64, 1);
  for (const ImageHeader& h : headers(2, 64, 64, 3)) mixed.push_back(h);
  n = picture_note(mixed, Shape{1, 64, 64});
  EXPECT_NE(n.find("2 of 8 in colour"), std::string::npos) << n;
  EXPECT_EQ(n.find("channels"), std::string::npos) << n;
  EXPECT_EQ(suggested_input(mixed, Shape{1, 64, 64}).rank(), 0u);
  EXPECT_EQ(suggested_input(photos, Shape{16}).rank(), 0u);  // not a picture Input
  // The median, not the mean: one huge file does not move it.
  std::vector<ImageHeader> sizes = headers(4, 100, 80, 0);
  sizes.push_back(headers(1, 9000, 9000, 0)[0]);
  EXPECT_EQ(picture_note(sizes, Shape{3, 100, 100}),
            "about 100×80 px (the median of 5 files' headers)");
  EXPECT_EQ(picture_note({}, Shape{3, 32, 32}), "");
  EXPECT_EQ(picture_note(headers(3, 0, 0, 0), Shape{3, 32, 32}), "");
}

TEST(ImageSniff, JpegHeaderIsFoundPastALargeExifSegment) {
  // An APP1 of 60 kB before the frame header, as a camera's EXIF with a
  // thumbnail: walked over by its length, the thumbnail's own end marker
  // inside it notwithstanding.
  const Bytes j = fixture("corner_32x16.jpg");
  Bytes app(60000, '\x11');
  app.replace(100, 4, "\xff\xd8\xff\xd9");
  Bytes seg("\xff\xe1", 2);
  seg += char((app.size() + 2) >> 8);
  seg += char((app.size() + 2) & 0xFF);
  const Bytes big = j.substr(0, 2) + seg + app + j.substr(2);
  EXPECT_EQ(sniff(big).w, 32);
  test::TmpDir t;
  EXPECT_EQ(check_image_file(t.write("exif.jpg", big)).h, 16);
  EXPECT_EQ(decode_image(t.path("exif.jpg"), 3).w, 32);
}

TEST(ImageSniff, AHeaderClaiming60000By60000PixelsIsRefusedUndecoded) {
  // A complete PNG of a few dozen bytes whose IHDR claims 3.6 gigapixels:
  // refused from the header, as Pillow's MAX_IMAGE_PIXELS does.
  const Bytes huge = png(60000, 60000, 8, 2, "");
  ASSERT_LT(huge.size(), 100u);
  expect_fault(huge, ImageFault::TooLarge, "60000×60000");
  // w·h overflows 64 bits unless the check avoids the product.
  expect_fault(png(0xFFFFFFFFu, 0xFFFFFFFFu, 8, 2, ""), ImageFault::TooLarge);
  // Just under the limit is not refused for its size.
  EXPECT_EQ(sniff(png(9459, 9459, 8, 0, "")).w, 9459);  // 89.47 Mpx
}

TEST(ImageSniff, TruncatedFilesAreCaughtBeforeDecoding) {
  const Bytes p = png(16, 16, 8, 2, Bytes(16 * 16 * 3, '\x7f'));
  expect_fault(p.substr(0, p.size() * 2 / 3), ImageFault::Truncated, "truncated");
  const Bytes j = fixture("corner_32x16.jpg");
  expect_fault(j.substr(0, j.size() * 2 / 3), ImageFault::Truncated, "truncated");
  // Headers cut short.
  expect_fault(p.substr(0, 20), ImageFault::Truncated);
  expect_fault(j.substr(0, 5), ImageFault::Truncated);
  expect_fault(fixture("quad_8x6.bmp").substr(0, 20), ImageFault::Truncated);
  expect_fault(fixture("quad_8x6.bmp").substr(0, 120), ImageFault::Truncated);
  expect_fault(fixture("quad_8x6_lossless.webp").substr(0, 30), ImageFault::Truncated);
  expect_fault(fixture("quad_8x6.ppm").substr(0, 100), ImageFault::Truncated);
  // A truncated JPEG padded with zeros (a download preallocated on disk).
  expect_fault(j.substr(0, j.size() / 2) + Bytes(5000, '\0'), ImageFault::Truncated);
}

TEST(ImageSniff, DataAfterTheEndMarkerIsNotTruncation) {
  const Bytes j = fixture("corner_32x16.jpg");
  test::TmpDir t;
  // A little padding, and a phone's "motion photo" video appended.
  for (const Bytes& tail : {Bytes(16, '\0'), Bytes(200000, '\x5a')}) {
    const std::string path = t.write("padded.jpg", j + tail);
    EXPECT_EQ(check_image_file(path).w, 32);
    EXPECT_EQ(decode_image(path, 3).h, 16);
  }
  const Bytes p = png(4, 4, 8, 0, Bytes(16, '\x10'));
  EXPECT_EQ(check_image_file(t.write("padded.png", p + Bytes(9000, '\x01'))).w, 4);
}

TEST(ImageSniff, EmptyTextAndUnknownFilesAreNamed) {
  EXPECT_THROW(sniff(""), ImageError);
  expect_fault("", ImageFault::Empty, "empty");
  expect_fault("Hello, this is a text file named .jpg\n", ImageFault::NotAnImage, "not an image");
  expect_fault(Bytes(3000, '\0'), ImageFault::NotAnImage);
}

TEST(ImageDecode, CorruptDataWithAValidHeaderIsRefusedByTheDecoder) {
  Bytes p = png(16, 16, 8, 2, Bytes(16 * 16 * 3, '\x7f'));
  // Garbage in the IDAT's compressed bytes; the header and IEND are intact.
  const size_t idat = p.find("IDAT");
  for (size_t k = idat + 6; k < idat + 20; ++k) p[k] = char(p[k] ^ 0x5A);
  test::TmpDir t;
  const std::string path = t.write("corrupt.png", p);
  EXPECT_EQ(check_image_file(path).w, 16);  // the header is fine
  try {
    decode_image(path, 3);
    FAIL() << "a corrupt PNG decoded";
  } catch (const ImageError& e) {
    EXPECT_EQ(int(e.fault()), int(ImageFault::Corrupt)) << e.what();
    EXPECT_NE(std::string(e.what()).find("corrupt.png"), std::string::npos);
  }
}

TEST(ImageCheck, UnreadableFilesGiveTheSystemsReason) {
  test::TmpDir t;
  auto reason = [](const std::string& path) -> std::string {
    try {
      check_image_file(path);
    } catch (const ImageError& e) {
      EXPECT_EQ(int(e.fault()), int(ImageFault::Unreadable)) << e.what();
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(reason(t.path("gone.jpg")).find("No such file"), std::string::npos);
  fs::create_symlink("loop.jpg", t.dir / "loop.jpg");
  EXPECT_NE(reason(t.path("loop.jpg")).find("symlink loop"), std::string::npos);
  fs::create_directory(t.dir / "folder.jpg");
  EXPECT_NE(reason(t.path("folder.jpg")).find("folder"), std::string::npos);
  // A FIFO named .jpg must not block the check (nothing ever writes to it).
  ASSERT_EQ(::mkfifo(t.path("pipe.jpg").c_str(), 0600), 0);
  EXPECT_NE(reason(t.path("pipe.jpg")).find("not a regular file"), std::string::npos);
  EXPECT_THROW(decode_image(t.path("pipe.jpg"), 3), ImageError);
}

TEST(ImageCheck, APermissionDeniedFileIsUnreadable) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which reads a chmod 000 file anyway";
  test::TmpDir t;
  const std::string p = t.write("locked.png", png(2, 2, 8, 0, "abcd"));
  fs::permissions(p, fs::perms::none);
  try {
    check_image_file(p);
    ADD_FAILURE() << "read a chmod 000 file";
  } catch (const ImageError& e) {
    EXPECT_EQ(int(e.fault()), int(ImageFault::Unreadable));
    EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
  }
  fs::permissions(p, fs::perms::owner_all);
}

TEST(ImageDecode, ConvertsGreyColourAlphaSixteenBitAndPalettesToTheInputsChannels) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  auto dec = [](const Bytes& b, int c) { return decode_image_bytes(u8(b), b.size(), c, "x"); };
  // Grey to RGB: the grey value in every channel.
  Picture p = dec(png(2, 1, 8, 0, rgb_px({10, 200})), 3);
  ASSERT_EQ(p.c, 3);
  EXPECT_EQ(p.px, std::vector<uint8_t>({10, 10, 10, 200, 200, 200}));
  // RGB to grey: 0.299 R + 0.587 G + 0.114 B (Pillow's convert("L")).
  p = dec(png(3, 1, 8, 2, rgb_px({255, 0, 0, 0, 255, 0, 0, 0, 255})), 1);
  ASSERT_EQ(p.c, 1);
  EXPECT_NEAR(p.px[0], 76, 1);
  EXPECT_NEAR(p.px[1], 150, 1);
  EXPECT_NEAR(p.px[2], 29, 1);
  // RGB stays in R, G, B order.
  p = dec(png(1, 1, 8, 2, rgb_px({1, 2, 3})), 3);
  EXPECT_EQ(p.px, std::vector<uint8_t>({1, 2, 3}));
  // RGBA: alpha dropped, not composited (Pillow's convert("RGB")).
  p = dec(png(2, 1, 8, 6, rgb_px({10, 20, 30, 0, 40, 50, 60, 128})), 3);
  EXPECT_EQ(p.px, std::vector<uint8_t>({10, 20, 30, 40, 50, 60}));
  // Grey + alpha.
  p = dec(png(1, 1, 8, 4, rgb_px({99, 0})), 1);
  EXPECT_EQ(p.px, std::vector<uint8_t>({99}));
  // 16-bit: scaled (65535 -> 255, 257·k -> k), not clipped.
  p = dec(png(3, 1, 16, 0, rgb_px({0xFF, 0xFF, 0x01, 0x01, 0x64, 0x64})), 1);
  EXPECT_EQ(p.px, std::vector<uint8_t>({255, 1, 100}));
  p = dec(png(1, 1, 16, 2, rgb_px({0xFF, 0xFF, 0x80, 0x80, 0, 0})), 3);
  EXPECT_EQ(p.px, std::vector<uint8_t>({255, 128, 0}));
  // A palette.
  p = dec(png(2, 1, 8, 3, rgb_px({1, 0}), rgb_px({0, 0, 0, 200, 100, 50})), 3);
  EXPECT_EQ(p.px, std::vector<uint8_t>({200, 100, 50, 0, 0, 0}));
  EXPECT_THROW(dec(png(1, 1, 8, 0, "a"), 2), DataError);
}

TEST(ImageDecode, CmykJpegIsConverted) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  const Bytes b = fixture("cmyk_16x16.jpg");
  const Picture p = decode_image_bytes(u8(b), b.size(), 3, "cmyk.jpg");
  ASSERT_EQ(p.c, 3);
  ASSERT_EQ(p.w, 16);
  // Red: C 0, M 100 %, Y 100 %, K 0.
  EXPECT_GT(p.px[0], 200);
  EXPECT_LT(p.px[1], 50);
  EXPECT_LT(p.px[2], 50);
  EXPECT_EQ(decode_image_bytes(u8(b), b.size(), 1, "cmyk.jpg").c, 1);
}

TEST(ImageDecode, ExifOrientationIsHonoured) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  // 32×16 with a white top-left corner; an APP1 Exif segment after SOI
  // says Orientation 6 (rotate 90° clockwise to show).
  const Bytes j = fixture("corner_32x16.jpg");
  Bytes exif("Exif\0\0MM\0*\0\0\0\x08\0\x01", 16);
  exif += Bytes("\x01\x12\0\x03\0\0\0\x01\0\x06\0\0", 12);
  exif += Bytes(4, '\0');
  Bytes seg("\xff\xe1", 2);
  seg += char(0);
  seg += char(exif.size() + 2);
  const Bytes rotated = j.substr(0, 2) + seg + exif + j.substr(2);
  auto px = [](const Picture& p, int x, int y) { return p.px[size_t((y * p.w + x) * p.c)]; };
  const Picture plain = decode_image_bytes(u8(j), j.size(), 3, "plain.jpg");
  ASSERT_EQ(plain.w, 32);
  ASSERT_EQ(plain.h, 16);
  EXPECT_GT(px(plain, 2, 2), 240);  // white corner, top left
  EXPECT_LT(plain.px[size_t((2 * 32 + 29) * 3 + 1)], 40);
  for (int c : {3, 1}) {
    const Picture p = decode_image_bytes(u8(rotated), rotated.size(), c, "rotated.jpg");
    ASSERT_EQ(p.w, 16) << c;
    ASSERT_EQ(p.h, 32) << c;
    // The white corner is now top right; top left is red (dark in G / grey).
    EXPECT_GT(p.px[size_t((2 * 16 + 13) * c + (c - 1))], 240) << c;
    EXPECT_LT(p.px[size_t((2 * 16 + 2) * c + (c == 3 ? 1 : 0))], 80) << c;
  }
  // The file path honours it too.
  test::TmpDir t;
  EXPECT_EQ(decode_image(t.write("r.jpg", rotated), 3).h, 32);
}

TEST(ImageDecode, BmpWebpTiffAndPnmRoundTrip) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  // 8×6 quadrants: red, green / blue, white.
  auto expect_quad = [](const Picture& p, const std::string& f, int tol) {
    ASSERT_EQ(p.w, 8) << f;
    ASSERT_EQ(p.h, 6) << f;
    const int want[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};
    const int at[4][2] = {{1, 1}, {6, 1}, {1, 4}, {6, 4}};
    for (int q = 0; q < 4; ++q)
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(p.px[size_t((at[q][1] * 8 + at[q][0]) * 3 + c)], want[q][c], tol)
            << f << " quadrant " << q << " channel " << c;
  };
  const std::string dir = std::string(DC_SOURCE_DIR) + "/tests/data/fixtures/";
  for (const char* f : {"quad_8x6.bmp", "quad_8x6.tiff", "quad_8x6.ppm", "quad_8x6_lossless.webp"})
    expect_quad(decode_image(dir + f, 3), f, 0);
  for (const char* f : {"quad_8x6_lossy.webp", "quad_8x6_alpha.webp"})
    expect_quad(decode_image(dir + f, 3), f, 60);
  const Picture g = decode_image(dir + "quad_8x6.pgm", 3);
  EXPECT_EQ(g.px[0], g.px[1]);
  EXPECT_NEAR(g.px[0], 76, 1);  // red as grey
}

TEST(ImageDecode, NonAsciiFileNamesAreRead) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  test::TmpDir t;
  const std::string p = t.write("фото ü 猫.png", png(3, 2, 8, 0, Bytes(6, '\x22')));
  EXPECT_EQ(check_image_file(p).w, 3);
  EXPECT_EQ(decode_image(p, 1).px[0], 0x22);
}

#ifdef DC_TEST_HAVE_OPENCV
// The engine decodes JPEGs with libjpeg directly (engine/data/jpeg_decode.h)
// and must give exactly OpenCV's bytes (RGB, grey, each EXIF orientation),
// so datasets, caches and predictions do not change with the decoder.
Bytes with_orientation(const Bytes& jpeg, int orientation) {
  Bytes exif("Exif\0\0II*\0\x08\0\0\0\x01\0", 16);
  exif += Bytes("\x12\x01\x03\0\x01\0\0\0", 8);
  exif += char(orientation);
  exif += Bytes(3, '\0');
  exif += Bytes(4, '\0');
  Bytes seg("\xff\xe1", 2);
  seg += char(0);
  seg += char(exif.size() + 2);
  return jpeg.substr(0, 2) + seg + exif + jpeg.substr(2);
}

std::vector<uint8_t> opencv_decode(const Bytes& b, int channels) {
  const cv::Mat buf(1, int(b.size()), CV_8U, const_cast<char*>(b.data()));
  cv::Mat img = cv::imdecode(buf, cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH), out;
  if (channels == 1 && img.channels() == 1)
    out = img;
  else if (channels == 1)
    cv::cvtColor(img, out, cv::COLOR_BGR2GRAY);
  else
    cv::cvtColor(img, out, img.channels() == 1 ? cv::COLOR_GRAY2RGB : cv::COLOR_BGR2RGB);
  out = out.clone();
  return std::vector<uint8_t>(out.data, out.data + out.total() * out.elemSize());
}

Bytes encode_jpeg(const cv::Mat& m, int quality = 90) {
  std::vector<uchar> out;
  cv::imencode(".jpg", m, out, {cv::IMWRITE_JPEG_QUALITY, quality});
  return Bytes(out.begin(), out.end());
}

// A seeded noisy gradient, so every DCT block has detail.
cv::Mat test_photo(int h, int w, int type) {
  cv::Mat m(h, w, type);
  cv::randu(m, 0, 64);
  cv::Mat ramp(h, w, type);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < m.channels(); ++c)
        ramp.ptr<uint8_t>(y)[x * m.channels() + c] = uint8_t((x * 3 + y * 2 + c * 50) % 192);
  return m + ramp;
}

TEST(ImageDecode, JpegsComeOutAsOpenCvDecodesThemInEveryOrientation) {
  cv::theRNG().state = 7;
  const Bytes colour = encode_jpeg(test_photo(37, 53, CV_8UC3));
  const Bytes grey = encode_jpeg(test_photo(37, 53, CV_8UC1));
  const Bytes corner = fixture("corner_32x16.jpg");
  for (const Bytes* file : {&colour, &grey, &corner})
    for (int o = 1; o <= 8; ++o) {
      const Bytes b = with_orientation(*file, o);
      for (int c : {1, 3}) {
        const Picture p = decode_image_bytes(u8(b), b.size(), c, "o.jpg");
        const bool turned = o >= 5;
        const cv::Mat ref = cv::imdecode(
            cv::Mat(1, int(b.size()), CV_8U, const_cast<char*>(b.data())), cv::IMREAD_ANYCOLOR);
        EXPECT_EQ(p.w, ref.cols) << o;
        EXPECT_EQ(p.h, ref.rows) << o;
        EXPECT_EQ(turned ? p.w < p.h : p.w > p.h, true) << o;
        EXPECT_EQ(p.px, opencv_decode(b, c)) << "orientation " << o << ", channels " << c;
      }
    }
}

TEST(ImageDecode, LargeJpegsAreDecodedSmallerInTheDctWhenAsked) {
  cv::theRNG().state = 11;
  // Smoothed: a photo's detail, not per-pixel noise, which the DCT and area
  // averaging discard differently.
  cv::Mat photo;
  cv::GaussianBlur(test_photo(800, 1200, CV_8UC3), photo, cv::Size(5, 5), 1.5);
  const Bytes b = encode_jpeg(photo);
  const Picture full = decode_image_bytes(u8(b), b.size(), 3, "big.jpg");
  EXPECT_EQ(full.w, 1200);
  EXPECT_EQ(decode_image_bytes(u8(b), b.size(), 3, "big.jpg", 801).w, 1200);  // 800 < 801
  // 800 / 2 = 400 >= 300 but 800 / 4 = 200 < 300: half size.
  const Picture half = decode_image_bytes(u8(b), b.size(), 3, "big.jpg", 300);
  ASSERT_EQ(half.w, 600);
  ASSERT_EQ(half.h, 400);
  EXPECT_EQ(decode_image_bytes(u8(b), b.size(), 3, "big.jpg", 100).h, 100);  // an eighth
  EXPECT_EQ(decode_image_bytes(u8(b), b.size(), 1, "big.jpg", 200).h, 200);  // a quarter, grey
  // The same picture as the full decode shrunk by area averaging, give or
  // take the DCT's rounding.
  cv::Mat shrunk;
  cv::resize(cv::Mat(full.h, full.w, CV_8UC3, const_cast<uint8_t*>(full.px.data())), shrunk,
             cv::Size(600, 400), 0, 0, cv::INTER_AREA);
  const cv::Mat got(400, 600, CV_8UC3, const_cast<uint8_t*>(half.px.data()));
  EXPECT_LT(cv::norm(got, shrunk, cv::NORM_L1) / double(got.total() * 3), 2.0);
  // Other formats ignore the request.
  std::vector<uchar> png;
  cv::imencode(".png", photo, png);
  EXPECT_EQ(decode_image_bytes(png.data(), png.size(), 3, "big.png", 100).w, 1200);
}
#endif

}  // namespace
}  // namespace dc
