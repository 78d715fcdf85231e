#pragma once
// Checked arithmetic for shapes and attributes. Sizes reach the engine from
// files written by others (projects, ONNX models), so a product of
// dimensions or a convolution's output size is computed here, where an
// overflow, a zero stride or an absurd size becomes a ShapeError that names
// the attribute instead of undefined behaviour, a SIGFPE or an allocation
// that exhausts memory.
#include <cstdint>
#include <span>
#include <string_view>

namespace dc {

// The most elements one tensor may hold (2^34: 16 Gi values, 64 GiB of f32),
// checked by Tensor before it allocates and by the ONNX importer for a
// model's input and constants. Far beyond any network trained here, small
// enough that element counts times a dtype's size never overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 34;
// The most bytes one tensor's storage may take (64 GiB).
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;

// a + b and a * b. `what` names the quantity in the ShapeError thrown on
// overflow ("the padded height").
int64_t checked_add(int64_t a, int64_t b, std::string_view what);
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);

// The product of dimensions. Throws ShapeError naming `what` for a
// negative dimension or a product beyond 64 bits. What the shape rules
// check: a network larger than a tensor may be is still sized (and then
// refused with what it would take: the memory checks before a Plan).
int64_t checked_product(std::span<const int64_t> dims, std::string_view what);
// The number of elements of a tensor of these dimensions: checked_product,
// and a count above kMaxTensorElements refused too.
int64_t checked_numel(std::span<const int64_t> dims, std::string_view what);
// The bytes of `elements` values of `elem_size` bytes each; throws
// ShapeError naming `what` above kMaxTensorElements or kMaxTensorBytes.
int64_t checked_bytes(int64_t elements, int64_t elem_size, std::string_view what);

// One axis of a convolution or pooling window (PyTorch's floor rule).
struct ConvWindow {
  int64_t extent = 0;  // dilation·(kernel−1)+1: the input span one window covers
  int64_t padded = 0;  // the input with its padding on both sides
  int64_t out = 0;     // windows that fit; 0 when extent > padded
};
// Throws ShapeError naming the attribute ("stride must be at least 1 but
// is 0 along the height") for a kernel, stride or dilation below 1,
// negative padding, or a size that overflows. `axis` is "height" or
// "width".
ConvWindow conv_window(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                       int64_t pad_before, int64_t pad_after, std::string_view axis);

}  // namespace dc
