#pragma once
// A user's own pictures as a dataset (issue 31): image folders (one
// subfolder per class) and CSV lists (path,label), decoded with OpenCV in
// the engine, so the CLI, the app, sweeps and the export read the same
// files the same way. Three layers:
//
//   decode_image()      one file -> a Picture (RGB or grey bytes, any size)
//   list_image_*()      a folder or CSV -> which files, which class, which split
//   ImageSamples        the listed files -> samples of the network's Input,
//                       held in memory or streamed from disk (with a cache)
//
// and load_image_dataset() puts them together into Datasets whose gather()
// decodes through ImageSamples (Dataset::images).
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dc {

// ---------------------------------------------------------------- decoding

// As Pillow's Image.MAX_IMAGE_PIXELS: a file whose header claims more
// pixels is refused before any pixel is decoded (a 60000×60000 PNG of a few
// kB would otherwise ask for 10 GB).
constexpr int64_t kMaxImagePixels = 89'478'485;
// A file larger than this is refused unread.
constexpr int64_t kMaxImageFileBytes = int64_t(256) << 20;

// False in a build without OpenCV; every function below then throws.
bool image_decoding_supported();
// True in a build without OpenCV's imgcodecs (DEEPCANVAS_OPENCV=JPEG):
// only JPEG files are decoded.
bool image_decoding_jpeg_only();
// Whether pictures can be read as samples of `input`: channels×height×width
// with 1 (grey) or 3 (RGB) channels.
bool picture_shape(const Shape& input);

// A decoded picture: h rows of w pixels of c bytes each (c = 1 grey or
// 3 RGB), rows contiguous (HWC).
struct Picture {
  int h = 0, w = 0, c = 0;
  std::vector<uint8_t> px;
  int64_t bytes() const { return int64_t(h) * w * c; }
};

// Why a file is not a usable image.
enum class ImageFault {
  Unreadable,  // cannot be opened or read: permissions, a symlink loop, vanished
  Empty,       // zero bytes
  NotAnImage,  // not a format DeepCanvas reads (a text file named .jpg)
  Truncated,   // the data ends before the image does
  Corrupt,     // the decoder rejects the data
  TooLarge,    // over kMaxImagePixels pixels, or a file over kMaxImageFileBytes
};
// A few words for a fault ("truncated", "not an image"), for counts.
const char* fault_name(ImageFault f);

// The exception for one bad image file: what() names the file and says why.
class ImageError : public DataError {
 public:
  ImageError(std::string path, ImageFault fault, const std::string& detail);
  const std::string& path() const { return path_; }
  ImageFault fault() const { return fault_; }
  // Why, without the path (for lists that name the file already).
  const std::string& detail() const { return detail_; }

 private:
  std::string path_;
  ImageFault fault_;
  std::string detail_;
};

// What a header says, read without decoding any pixel.
struct ImageHeader {
  std::string format;  // "png", "jpeg", "bmp", "webp", "tiff", "pnm"
  int64_t w = 0, h = 0;
  // As stored: 1 grey, 3 colour (alpha, CMYK and palettes count as colour);
  // 0 when the header does not say (a BMP of 8 bits or fewer).
  int channels = 0;
};
// Reads the header (and for PNG and JPEG checks the trailer, so a truncated
// file is caught before the decoder pads it with grey). Throws ImageError:
// NotAnImage, Truncated, TooLarge, Empty.
ImageHeader sniff_image(const uint8_t* data, size_t size, const std::string& name);

// Reads one file and decodes it to `channels` (1 grey, 3 RGB): EXIF
// orientation applied, 16-bit scaled to 8-bit, alpha dropped, CMYK and
// palettes converted. Throws ImageError. With `at_least` > 0 a JPEG may be
// decoded 2, 4 or 8 times smaller (scaled in the DCT, several times faster)
// while its shorter side stays at least that many pixels: what the loaders
// pass is the stored side, so a 12-megapixel photo for a 224-pixel Input is
// decoded at 1/8 scale.
Picture decode_image(const std::string& path, int channels, int at_least = 0);
Picture decode_image_bytes(const uint8_t* data, size_t size, int channels, const std::string& name,
                           int at_least = 0);
// Checks one file as decode_image would before decoding (open, size,
// sniff_image): cheap enough to run on every file when a folder is listed.
// Throws ImageError.
ImageHeader check_image_file(const std::string& path);

// ----------------------------------------------------------------- listing

struct ImageItem {
  std::string path;  // absolute, UTF-8
  int32_t label = 0;
};

// A file left out of a dataset and why, for the counts and lists the CLI
// and the app show.
struct SkippedFile {
  std::string path;        // relative to the dataset's root
  std::string why;         // "not an image (.txt)", "truncated", "hidden", "symlink loop"...
  bool bad_image = false;  // an image name whose content is bad (vs. ignored by name)
};

struct ImageList {
  std::string root;  // the folder (or the CSV's folder)
  std::vector<std::string> class_names;
  // Each split ordered by class, then by path (bytewise). val is filled
  // only from a val/ folder (or a CSV's "split" column); test from test/ or
  // else by the seeded per-class fraction.
  std::vector<ImageItem> train, val, test;
  std::vector<SkippedFile> skipped;
  // Class folders that hold no usable image: left out of class_names.
  std::vector<std::string> empty_classes;
};

struct ImageListOptions {
  double test_fraction = 0.1;  // used when there is no test/ folder
  uint64_t split_seed = 1;
  // Check every file's header while listing (check_image_file), so bad
  // images are skipped before any run and both loading paths agree.
  bool check_files = true;
  bool bad_images_are_errors = false;  // throw on the first bad image instead
};

// A folder of class folders. The split, which the PyTorch export's
// train.py repeats exactly:
//  - classes: the non-hidden subfolders of root/train when root/train/
//    exists, else of root, sorted bytewise; a class with no image is left
//    out (empty_classes);
//  - a class's files: regular files anywhere below its folder, hidden
//    files and folders (a name starting with '.') left out, extension
//    .png .jpg .jpeg .bmp .webp .tif .tiff .pgm .ppm (any case), sorted
//    by path bytewise; links are followed, except a folder link to a
//    folder already on the way down from root (a loop, skipped), and
//    folders 64 or more levels below the class folder are not walked;
//  - val from root/val/<class> and test from root/test/<class> when those
//    folders exist;
//  - otherwise test: one Rng(split_seed) for all classes in order; for
//    each class its sorted files are shuffled by Fisher-Yates
//    (for i = n..2: swap(v[i-1], v[rng.below(i)])) and the first
//    floor(n * test_fraction + 0.5) (at most n - 1) become test (halves
//    round up: not Python's round()).
ImageList list_image_folder(const std::string& dir, const ImageListOptions& o);

// A CSV file with a header naming the columns "path" and "label" (and
// optionally "split": train, val or test); paths relative to the CSV's
// folder; labels are class names (sorted bytewise into class indices).
// Rows without a split go to train, then test by the fraction as above
// when no row's split is test. Paths and labels are taken as written (no
// trimming); a label whose rows are all skipped is in empty_classes.
ImageList list_image_csv(const std::string& csv, const ImageListOptions& o);

// The file extensions read as pictures (lower case, with the dot): the
// folder listing above, the Inference tab's file dialog and folders, and
// predict's folders all take these.
const std::vector<std::string>& image_extensions();
// Whether a file name has one of them (in any case).
bool has_image_extension(const std::string& name);

// The picture files directly in `dir` (not its subfolders), as predict and
// the Inference tab open a folder: regular files (links followed) with an
// extension above, hidden names left out as the folder listing leaves them,
// full paths sorted bytewise. Empty when there are none; throws dc::IoError
// naming the folder when it cannot be read.
std::vector<std::string> image_files_in(const std::string& dir);

// True when `dir` looks like an image folder: it has a subfolder (or
// train/ with a subfolder) holding a file with an image extension. Lets
// --data accept an image folder without being told its kind.
bool looks_like_image_folder(const std::string& dir);

// When `dir` has no pictures of its own but looks_like_image_folder (a
// whole dataset given where pictures were expected, as predict and the
// Inference tab open folders): its class folders' names (not hidden,
// sorted bytewise; those in dir/train when the dataset is split into
// train/, val/, test/), for a message that names the classes. Else empty.
std::vector<std::string> class_folders_in(const std::string& dir);
// "DIR holds class folders (cat, dog, fox and 7 more), not pictures" (or
// "holds a dataset with class folders (…) in train/"), or "" when
// class_folders_in(dir) is empty. The CLI and the app add what to do.
std::string class_folders_note(const std::string& dir);

// ---------------------------------------------------------------- samples

// How a Picture becomes a sample of the Input (C×H×W), following
// torchvision's conventions.
struct ImageTransform {
  Shape input;  // C×H×W, C = 1 or 3
  // Evaluation (and training without random_resized_crop): resize so the
  // picture covers H/crop_fraction × W/crop_fraction, then centre-crop H×W
  // (torchvision's Resize(256) + CenterCrop(224) at 0.875).
  double crop_fraction = 0.875;
  // Training: torchvision's RandomResizedCrop(scale=(0.08, 1), ratio=(3/4,
  // 4/3)) from the whole picture.
  bool random_resized_crop = false;
  // Training: brightness, contrast and saturation factors uniform in
  // [1 - j, 1 + j] (torchvision's ColorJitter(j, j, j)).
  double color_jitter = 0;
};

// A picture as sample `i` of the Input: draw_seed 0 is the evaluation
// transform, any other value draws the training transform from (draw_seed,
// i) alone. Writes t.input.numel() bytes, C×H×W.
void picture_to_chw(const Picture& p, const ImageTransform& t, uint64_t draw_seed, int64_t i,
                    uint8_t* chw);

// The resolution pictures are stored at, by both loading paths: the
// shorter side at most S = ceil(max(H, W) / crop_fraction) and the longer at
// most 4 S, keeping the aspect ratio; never enlarged.
int stored_side(const ImageTransform& t);
Picture store_picture(Picture p, const ImageTransform& t);

// The region RandomResizedCrop takes from an h×w picture for sample i
// under draw_seed (torchvision's algorithm, its draws from splitmix64_at).
struct CropBox {
  int x = 0, y = 0, w = 0, h = 0;
};
CropBox random_resized_crop_box(int h, int w, uint64_t draw_seed, int64_t i);

struct ImageLoadOptions {
  // Memory: every picture decoded before training and kept; Stream: decoded
  // by worker threads as batches are needed; Auto: Memory when the decoded
  // pictures fit memory_budget.
  enum class Mode { Auto, Memory, Stream };
  Mode mode = Mode::Auto;
  int64_t memory_budget = 0;  // bytes; 0: a quarter of the available memory
  // Where streamed pictures are cached, decoded at the training
  // resolution: "" = ~/.cache/DeepCanvas, "none" = no cache.
  std::string cache_dir;
  int workers = 0;  // decoding threads; 0 = the machine's cores
  bool bad_images_are_errors = false;
};

// Counts of images that turned out bad while loading or mid-epoch (those
// found by the listing are in ImageList::skipped).
struct BadImageLog {
  std::vector<SkippedFile> files;  // the first 100
  int64_t count = 0;
};

// The samples of one split. Thread-safe: the loader's workers call
// sample() at once.
class ImageSamples {
 public:
  virtual ~ImageSamples() = default;
  virtual int64_t size() const = 0;
  // Writes sample i as u8 C×H×W. `draw_seed` 0 is the evaluation transform;
  // any other value draws the training transform from (draw_seed, i) alone,
  // so a sample's augmentation does not depend on which path or thread
  // decodes it. Returns false when the file turned out bad (counted in
  // bad(); the bytes are then black), unless bad images are errors.
  virtual bool sample(int64_t i, uint64_t draw_seed, uint8_t* chw) const = 0;
  // The whole picture as stored (for previews).
  virtual Picture picture(int64_t i) const = 0;
  virtual const ImageItem& item(int64_t i) const = 0;
  virtual const ImageTransform& transform() const = 0;
  virtual bool streaming() const = 0;
  // One line for the log: "held in memory (312 MB)", "streamed, cache at …".
  virtual std::string mode_note() const = 0;
  virtual BadImageLog bad() const = 0;
  // Files decoded since the samples were made, and pictures read from the
  // streaming cache instead (tests, benchmarks, the app's counts).
  virtual int64_t decodes() const { return 0; }
  virtual int64_t cache_hits() const { return 0; }
  // Threads the loader decodes and transforms these samples on (0: one per
  // hardware thread), from ImageLoadOptions::workers.
  virtual int workers() const { return 0; }
};

// Progress while pictures are decoded into memory: (done, total); return
// false to cancel (load_image_dataset then throws Error("cancelled")).
using ImageProgress = std::function<bool(int64_t, int64_t)>;

std::shared_ptr<ImageSamples> make_image_samples(std::vector<ImageItem> items,
                                                 const ImageTransform& t, const ImageLoadOptions& o,
                                                 const ImageProgress& progress = {});

// What loading an image dataset found, for the CLI's and the app's words.
struct ImageDataReport {
  ImageList list;  // classes, counts, skipped files
  std::string mode_note;
  std::string picture_note;  // picture_note() of the training files
  Shape suggested_input;     // suggested_input() for them; rank 0: none
};

// What a sample of files' headers says of the pictures, beside what the
// Input takes: "about 380×284 px, in colour (the median of 64 files'
// headers)", then advice where the Input throws away what they hold (a
// 1-channel Input for colour pictures; a side under 64 px for pictures 4
// times larger). "" when no header gave a size.
std::string picture_note(const std::vector<ImageHeader>& sampled, const Shape& input);
// The Input that keeps what picture_note advises keeping: 3 channels for
// colour pictures, a 64×64 side for pictures a small Input shrinks 4 times
// or more; rank 0 when it advises nothing.
Shape suggested_input(const std::vector<ImageHeader>& sampled, const Shape& input);

// The list's train (with val appended and its indices in
// Dataset::validation) and test splits as Datasets of the transform's
// Input, with class names and no pixels: gather() decodes through
// Dataset::images.
TrainTest load_image_dataset(const ImageList& list, const ImageTransform& t,
                             const ImageLoadOptions& o, ImageDataReport* report = nullptr,
                             const ImageProgress& progress = {});

// One image file as the network sees it at evaluation: u8 C×H×W of
// `input` (the Inference tab, predict). Throws ImageError or DataError.
std::vector<uint8_t> read_image_chw(const std::string& path, const Shape& input,
                                    double crop_fraction = 1.0);
// One frame from camera `index`, converted like read_image_chw. Throws
// IoError when there is no camera or this OpenCV has no videoio.
std::vector<uint8_t> capture_camera_chw(int index, const Shape& input);

}  // namespace dc
