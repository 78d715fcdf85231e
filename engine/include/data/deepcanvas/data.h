#pragma once
// Datasets held in memory and the batch loader that feeds training.
#include <deepcanvas/augment_config.h>
#include <deepcanvas/augment_pixel.h>
#include <deepcanvas/normalize_pixel.h>
#include <deepcanvas/tensor.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dc {

class ImageSamples;  // image_data.h
class WorkPool;      // the threads that decode pictures (data/work_pool.h)

// Windows over one sequence, made as they are gathered: sample i is the
// `window` steps before position first + i*stride (steps before the start
// read 0, the padding token). A text corpus has one token id per step; a
// series (CSV rows) has `width` values per step. The sequence is held once,
// shared by the training and test sets, instead of a copy per window: at
// window 64 and stride 1 that copy was 256 bytes per character, so a 100 MB
// corpus took 25 GB before the first step.
struct SequenceWindows {
  std::shared_ptr<const std::vector<int32_t>> ids;  // tokens; or
  std::shared_ptr<const std::vector<float>> rows;   // `width` values a step
  int64_t width = 1;
  int64_t window = 1, first = 0, stride = 1;
  // Sample `sample`'s window × width values as floats (what the network
  // reads).
  void write(int64_t sample, float* out) const;
  // How many of the first `samples` windows read step `step` (the weight a
  // step has in statistics of the windows as if each were stored).
  int64_t readers(int64_t step, int64_t samples) const;
};

struct Dataset {
  Shape sample_shape;                    // per sample, e.g. {1,28,28}
  std::vector<uint8_t> pixels;           // u8 samples (IDX images), size()*sample numel; or empty
  std::vector<float> values;             // f32 samples (non-image data); empty when pixels is used
  std::vector<int32_t> labels;           // one per sample
  int num_classes = 0;                   // max label + 1 (or declared)
  std::vector<std::string> class_names;  // filled in by load_fashion_mnist
  // The names of a step's values (a CSV series' feature columns), for
  // display; empty when the data has none.
  std::vector<std::string> feature_names;
  // Normalisation applied when gathering: pixels -> (p/255 - mean)/stddev,
  // values -> (v - mean)/stddev.
  float mean = 0.f, stddev = 1.f;
  // Per-channel normalisation of byte images (a pretrained base's, e.g.
  // ImageNet's): when set (one value per channel), pixels -> (p/255 -
  // channel_mean[c]) / channel_std[c] and mean/stddev are not used.
  std::vector<float> channel_mean, channel_std;
  std::string source;  // file or folder it came from (for messages)
  // values are token ids (text): never normalised, so they stay exact.
  bool tokens = false;
  // Samples made from one sequence as they are read (text corpora, CSV
  // series): values is then empty and the windows hold the samples.
  std::shared_ptr<const SequenceWindows> windows;
  // Image files decoded on demand (image folders and CSV lists): pixels and
  // values are then empty, labels hold one label per sample, and gather()
  // takes each sample's u8 bytes from here.
  std::shared_ptr<const ImageSamples> images;
  // Indices of a validation split the data itself defines (an image
  // folder's val/): when not empty, training validates on these instead of
  // splitting off training.val_split.
  std::vector<int64_t> validation;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // Writes n samples (normalised float, [n, ...sample_shape] contiguous) and
  // their labels (labels may be null). Throws DataError for an index outside
  // the dataset.
  void gather(const int64_t* idx, int64_t n, float* x, int32_t* labels) const;
  // As above with the training transform of image datasets: draw_seed 0 is
  // the evaluation transform, any other value draws each picture's
  // augmentation from (draw_seed, index) (ImageSamples::sample). Samples
  // whose file turned out bad are left out: the rest are written
  // contiguously and their count returned. With a pool, pictures are
  // decoded and transformed on its threads.
  int64_t gather(const int64_t* idx, int64_t n, float* x, int32_t* labels, uint64_t draw_seed,
                 WorkPool* pool = nullptr) const;
  // As above, writing the samples' bytes as stored or decoded, neither
  // normalised nor augmented, for a device that does both while it gathers
  // (DevicePlan::set_batch). Byte images only: throws DataError for
  // numeric samples.
  int64_t gather_bytes(const int64_t* idx, int64_t n, uint8_t* x, int32_t* labels,
                       uint64_t draw_seed, WorkPool* pool = nullptr) const;
  // Samples [begin, begin + n) of float data as stored, not normalised
  // ([n, ...sample_shape] contiguous): from values, or made by the windows.
  // Throws DataError for byte data or a range outside the dataset.
  void copy_values(int64_t begin, int64_t n, float* out) const;
  // Whether the samples are image bytes (gather_bytes can take them).
  bool is_bytes() const { return images != nullptr || (!pixels.empty() && values.empty()); }
  // Throws DataError naming the dataset unless is_bytes().
  void require_bytes() const;
};

// Empty when the settings are in range, else a message naming the first bad one.
std::string augment_problem(const AugmentConfig& a);
using AugmentDraw = aug::Draw;
// The per-pixel parameters for samples of shape {C, H, W}: black and white
// are what pixel values 0 and 1 normalise to (white = INFINITY for float
// data, whose brightened values are not capped). Translation maxima are
// floor(translate * W) and floor(translate * H) pixels.
aug::Params augment_params(const AugmentConfig& a, const Shape& sample, float black,
                           float white = INFINITY);
AugmentDraw augment_draw(const AugmentConfig& a, const Shape& sample, uint64_t seed, int64_t i);
// x: n normalised samples of shape {C, H, W}, augmented in place; pad_value
// is what a black pixel normalises to and white_value what a white one does
// (byte images; float data leaves it at INFINITY).
void augment_batch(const AugmentConfig& a, const Shape& sample, float pad_value, uint64_t seed,
                   float* x, int64_t n, float white_value = INFINITY);
// What pixel values 0 (black: padding and fill) and 1 (white: the
// brightness cap) normalise to, one value for every channel or one per
// channel (per-channel normalisation, dataset.preprocess.mean/std).
struct AugmentLevels {
  std::vector<float> black, white;
};
// As above with per-channel levels: channel c is padded with black[c] and
// capped at white[c] (a single value applies to every channel). Throws
// DataError when a list has neither 1 nor C values.
void augment_batch(const AugmentConfig& a, const Shape& sample, const AugmentLevels& levels,
                   uint64_t seed, float* x, int64_t n);
// The levels of a dataset's normalised samples as gather() produces them:
// per channel when it has channel_mean/channel_std (byte images), else
// from mean/stddev; white is INFINITY for float data.
AugmentLevels augment_levels(const Dataset& d);
// How gather() normalises d's samples (normalize_pixel.h), for kernels that
// gather on their own (the CUDA plan's). Throws DataError when the
// per-channel statistics do not fit the samples or exceed
// norm::kMaxChannels channels.
norm::Params normalisation(const Dataset& d);

// Reads an IDX image file and its IDX label file, gzip-compressed (detected by
// the magic bytes 1f 8b) or raw. Images are unsigned bytes of rank 2 (N×F,
// samples {F}), 3 (N×H×W, samples {1,H,W}) or 4 (N×C×H×W, channels first).
// Throws IoError naming the file for anything unreadable or malformed, and
// DataError when the two files do not belong together.
// A gzip file is inflated only as far as its header declares, which is at
// most kMaxIdxBytes of data.
Dataset load_idx(const std::string& images_path, const std::string& labels_path);
constexpr int64_t kMaxIdxBytes = int64_t(4) << 30;

struct TrainTest {
  Dataset train, test;
};

// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
// and t10k-labels-idx1-ubyte (each optionally .gz) from a folder.
TrainTest load_idx_folder(const std::string& dir);
// load_idx_folder plus the 10 Fashion-MNIST class names.
TrainTest load_fashion_mnist(const std::string& dir);

// Image preprocessing a project asks for, so that data fits a network made
// for other images (a pretrained RGB base fed grey 28x28 Fashion-MNIST):
// bilinear resize to size x size, grey replicated to 3 channels, and fixed
// per-channel normalisation. Zero/empty fields leave that step out.
struct ImagePreprocess {
  int64_t size = 0;              // > 0: resize every image to size x size
  int64_t channels = 0;          // 3: grey -> RGB (1 or 3: what the images must end with)
  std::vector<float> mean, std;  // one per output channel, on p/255
  bool active() const { return size > 0 || channels > 0 || !mean.empty(); }
};
// Empty when p is usable, else what is wrong with it (names the field).
std::string preprocess_problem(const ImagePreprocess& p);
// Applies p to a byte-image dataset in place (sample_shape {C,H,W}); throws
// DataError naming the dataset for float or sequence data, or for a channel
// count it cannot produce (RGB -> grey is not offered).
void preprocess_images(Dataset& d, const ImagePreprocess& p);
// One image, channels-first bytes of shape {C,H,W}, as preprocess_images
// would store it: the resized/replicated bytes, shape updated.
std::vector<uint8_t> preprocess_image(const std::vector<uint8_t>& chw, Shape& shape,
                                      const ImagePreprocess& p);

// Sets mean/stddev to those of p/255 (or of the values) over the dataset.
void compute_normalization(Dataset& d);

// 0, 1, ..., n-1: every sample of a dataset, or every slot of a batch.
std::vector<int64_t> all_indices(int64_t n);
// `indices`, or all n samples when it is empty: evaluation and prediction
// read an empty selection as the whole dataset.
std::vector<int64_t> indices_or_all(const std::vector<int64_t>& indices, int64_t n);

// Splits off a validation subset: {train_indices, val_indices}, chosen by a
// shuffle with seed, val = round(fraction*n); both lists come back sorted.
// Ordered data (a text's windows) gives its last val samples instead.
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_indices(int64_t n, double val_fraction,
                                                                    uint64_t seed,
                                                                    bool ordered = false);

// The training order of one epoch: `indices` shuffled by a stream derived
// from (seed, epoch) alone, so a run resumed at epoch k replays exactly the
// order an uninterrupted run had. The loader and the device trainer both
// take their order from here.
std::vector<int64_t> epoch_order(std::vector<int64_t> indices, uint64_t seed, int epoch);
// The seed of training step `step` (dropout masks, augmentation), from
// (seed, step) alone for the same reason; CPU and CUDA steps use the same.
uint64_t step_seed(uint64_t seed, int64_t step);
// The picture draw seed of a training epoch (never 0, which means
// evaluation), from (seed, epoch) alone.
uint64_t epoch_draw_seed(uint64_t seed, int epoch);

struct Batch {
  Tensor x;  // [n, ...sample_shape]: normalised floats, or bytes (BatchLoader's `bytes`)
  std::vector<int32_t> labels;
  int64_t n = 0;
};

// Prefetches batches on a background thread so compute never waits on data;
// an image dataset's pictures are decoded on a pool of worker threads
// (ImageSamples::workers). The dataset must outlive the loader. A training
// loader (training_draws) gathers with epoch_draw_seed(seed, epoch), so
// image datasets get their picture augmentation; others gather the
// evaluation transform. Samples whose file turned out bad are left out of
// their batch; with bad images as errors the ImageError comes out of next().
// With `bytes` (byte images only), batches hold the samples' bytes (a U8
// tensor, from Dataset::gather_bytes) for a device that normalises and
// augments them itself, a quarter of the floats' size to copy.
class BatchLoader {
 public:
  BatchLoader(const Dataset& ds, std::vector<int64_t> indices, int64_t batch, bool shuffle,
              bool drop_last, uint64_t seed, int prefetch = 3, bool training_draws = false,
              bool bytes = false);
  ~BatchLoader();  // stops and joins the thread
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The order depends only on (seed, epoch), so runs repeat; abandons any
  // epoch still in progress and starts prefetching.
  void start_epoch(int epoch);
  // False at the end of the epoch. Rethrows an error from the loader thread.
  bool next(Batch& out);
  int64_t batches_per_epoch() const;
  int64_t samples_per_epoch() const;

 private:
  void stop();
  void produce(std::vector<int64_t> order, uint64_t draw_seed);
  Tensor batch_tensor(int64_t n);

  const Dataset& ds_;
  std::vector<int64_t> indices_;
  int64_t batch_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  size_t prefetch_;
  bool training_draws_, bytes_;
  std::unique_ptr<WorkPool> pool_;  // image datasets only
  // The batch tensors made so far, reused once their consumer let go of
  // them (producer thread only).
  std::vector<Tensor> made_;

  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  bool stop_ = false, done_ = false, started_ = false;
  std::exception_ptr error_;
};

}  // namespace dc
