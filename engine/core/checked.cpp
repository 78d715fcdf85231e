#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>

#include <string>

namespace dc {

namespace {

std::string str(std::string_view s) {
  return std::string(s);
}

[[noreturn]] void overflow(std::string_view what, int64_t a, const char* op, int64_t b) {
  throw ShapeError(str(what) + " overflows: " + std::to_string(a) + op + std::to_string(b) +
                   " is beyond a 64-bit integer");
}

// count < 0: beyond 64 bits.
[[noreturn]] void too_many(std::string_view what, int64_t count) {
  throw ShapeError(str(what) + " would hold " +
                   (count < 0 ? std::string() : std::to_string(count) + " values, ") +
                   "more than the " + std::to_string(kMaxTensorElements) +
                   " values (2^34) one tensor may hold");
}

}  // namespace

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow(what, a, " + ", b);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow(what, a, " × ", b);
  return r;
}

namespace {

// The product, or -1 when it passes 64 bits.
int64_t product_or_wrapped(std::span<const int64_t> dims, std::string_view what) {
  int64_t n = 1;
  bool wrapped = false;
  for (int64_t d : dims) {
    if (d < 0)
      throw ShapeError(str(what) + " has a negative dimension (" + std::to_string(d) + ")");
    // Goes on past an overflow so that a later 0 still makes the count 0
    // (an empty tensor holds nothing, whatever its other dimensions).
    if (!wrapped && __builtin_mul_overflow(n, d, &n)) wrapped = true;
  }
  for (int64_t d : dims)
    if (d == 0) return 0;
  return wrapped ? -1 : n;
}

}  // namespace

int64_t checked_product(std::span<const int64_t> dims, std::string_view what) {
  const int64_t n = product_or_wrapped(dims, what);
  if (n < 0) throw ShapeError(str(what) + " would hold more values than a 64-bit count holds");
  return n;
}

int64_t checked_numel(std::span<const int64_t> dims, std::string_view what) {
  const int64_t n = product_or_wrapped(dims, what);
  if (n < 0 || n > kMaxTensorElements) too_many(what, n);
  return n;
}

int64_t checked_bytes(int64_t elements, int64_t elem_size, std::string_view what) {
  if (elements < 0 || elem_size < 0)
    throw ShapeError(str(what) + " has a negative size (" + std::to_string(elements) + " × " +
                     std::to_string(elem_size) + " bytes)");
  if (elements > kMaxTensorElements) too_many(what, elements);
  const int64_t bytes = elements * elem_size;  // no overflow: both are small here
  if (elem_size > kMaxTensorBytes || bytes > kMaxTensorBytes)
    throw ShapeError(str(what) + " would take " + std::to_string(bytes) + " bytes, more than the " +
                     std::to_string(kMaxTensorBytes) + " (64 GiB) one tensor may take");
  return bytes;
}

ConvWindow conv_window(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                       int64_t pad_before, int64_t pad_after, std::string_view axis) {
  const std::string along = " along the " + str(axis);
  auto at_least = [&](const char* name, int64_t v, int64_t min) {
    if (v < min)
      throw ShapeError(std::string(name) + " must be at least " + std::to_string(min) + " but is " +
                       std::to_string(v) + along);
  };
  at_least("the input size", in, 0);
  at_least("kernel", kernel, 1);
  at_least("stride", stride, 1);
  at_least("dilation", dilation, 1);
  at_least("padding", pad_before, 0);
  at_least("padding", pad_after, 0);
  ConvWindow w;
  w.extent = checked_add(checked_mul(dilation, kernel - 1, "the dilated kernel" + along), 1,
                         "the dilated kernel" + along);
  w.padded = checked_add(checked_add(in, pad_before, "the padded input" + along), pad_after,
                         "the padded input" + along);
  // Both are positive now, so the difference and the quotient cannot overflow.
  w.out = w.extent > w.padded ? 0 : (w.padded - w.extent) / stride + 1;
  return w;
}

}  // namespace dc
