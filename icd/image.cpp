// Images on the client side: creation, queries, transfers, copies, fills and mappings.
// Transfers leave the application's memory where it is in-process (the native call) and on the
// memory data path (the proxy gathers or scatters its rows, or the native runtime moves them in a
// shared segment); over MPI host data travels packed, the application's row and slice pitches
// applied here, on the side that holds its memory.
#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "icd/api.hpp"
#include "icd/spanning.hpp"
#include "image_format.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

using Sizes = std::array<size_t, 3>;

// How a region lies in host memory: the step between its rows (the images of a 1D array)
// and between its slices.
struct HostLayout {
  size_t row_step;
  size_t slice_step;
};

Coordinates coordinates(const Sizes& sizes) { return {sizes[0], sizes[1], sizes[2]}; }

Sizes sizes_of(const size_t* values) { return {values[0], values[1], values[2]}; }

bool is_image_type(cl_mem_object_type type) {
  switch (type) {
    case CL_MEM_OBJECT_IMAGE1D: case CL_MEM_OBJECT_IMAGE1D_BUFFER: case CL_MEM_OBJECT_IMAGE1D_ARRAY:
    case CL_MEM_OBJECT_IMAGE2D: case CL_MEM_OBJECT_IMAGE2D_ARRAY: case CL_MEM_OBJECT_IMAGE3D: return true;
    default: return false;
  }
}

Sizes extent(const cl_image_desc& desc) {
  const auto pixels = image_extent(desc.image_type, desc.image_width, desc.image_height, desc.image_depth,
                                   desc.image_array_size);
  return {pixels[0], pixels[1], pixels[2]};
}

size_t packed_bytes(size_t element, const Sizes& region) { return element * region[0] * region[1] * region[2]; }

// The same for a region the application gave: 0 where the product is no size (the device refuses it).
size_t packed_bytes_or_none(size_t element, const Sizes& region) {
  size_t bytes = element;
  for (const size_t pixels : region)
    if (__builtin_mul_overflow(bytes, pixels, &bytes)) return 0;
  return bytes;
}

// The layout of `region` with the application's pitches (0: packed); `invalid` when they are too small.
HostLayout host_layout(cl_mem_object_type type, size_t element, const Sizes& region, size_t row_pitch,
                       size_t slice_pitch, cl_int invalid) {
  const size_t row = region[0] * element;
  if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
    const size_t step = slice_pitch ? slice_pitch : row;  // image_slice_pitch: from one 1D image to the next
    if (step < row) throw ClError{invalid};
    return {step, step * region[1]};
  }
  const size_t row_step = row_pitch ? row_pitch : row;
  const size_t slice_step = slice_pitch ? slice_pitch : row_step * region[1];
  if (row_step < row || slice_step < row_step * region[1]) throw ClError{invalid};
  return {row_step, slice_step};
}

bool is_packed(const HostLayout& layout, size_t element, const Sizes& region) {
  const size_t row = region[0] * element;
  return (region[1] <= 1 || layout.row_step == row) && (region[2] <= 1 || layout.slice_step == row * region[1]);
}

// Copies a region between packed memory and host memory laid out as `layout`.
void copy_region(std::byte* packed, std::byte* host, const HostLayout& layout, size_t element, const Sizes& region,
                 bool to_host) {
  const size_t row = region[0] * element;
  for (size_t z = 0; z < region[2]; ++z)
    for (size_t y = 0; y < region[1]; ++y) {
      std::byte* at_host = host + z * layout.slice_step + y * layout.row_step;
      std::byte* at_packed = packed + (z * region[1] + y) * row;
      if (to_host) {
        std::memcpy(at_host, at_packed, row);
      } else {
        std::memcpy(at_packed, at_host, row);
      }
    }
}

// The largest value of a device limit over the context's devices that support images.
size_t image_limit(const _cl_context* context, cl_device_info param) {
  size_t largest = 0;
  for (cl_device_id device : context->devices)
    if (device_value<cl_bool>(device, CL_DEVICE_IMAGE_SUPPORT)) largest = std::max(largest, device_value<size_t>(device, param));
  return largest;
}

void check_image_size(const _cl_context* context, const cl_image_desc& desc) {
  const auto within = [&](size_t value, cl_device_info limit) { return value <= image_limit(context, limit); };
  const Sizes size = extent(desc);
  bool fits = true;
  switch (desc.image_type) {
    case CL_MEM_OBJECT_IMAGE1D_BUFFER: fits = within(size[0], CL_DEVICE_IMAGE_MAX_BUFFER_SIZE); break;
    case CL_MEM_OBJECT_IMAGE1D: fits = within(size[0], CL_DEVICE_IMAGE2D_MAX_WIDTH); break;
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
      fits = within(size[0], CL_DEVICE_IMAGE2D_MAX_WIDTH) && within(size[1], CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
      break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: fits = within(size[2], CL_DEVICE_IMAGE_MAX_ARRAY_SIZE); [[fallthrough]];
    case CL_MEM_OBJECT_IMAGE2D:
      fits = fits && within(size[0], CL_DEVICE_IMAGE2D_MAX_WIDTH) && within(size[1], CL_DEVICE_IMAGE2D_MAX_HEIGHT);
      break;
    case CL_MEM_OBJECT_IMAGE3D:
      fits = within(size[0], CL_DEVICE_IMAGE3D_MAX_WIDTH) && within(size[1], CL_DEVICE_IMAGE3D_MAX_HEIGHT) &&
             within(size[2], CL_DEVICE_IMAGE3D_MAX_DEPTH);
      break;
  }
  if (!fits) throw ClError{CL_INVALID_IMAGE_SIZE};
}

// The descriptor checked as clCreateImage must; the image's host layout.
HostLayout check_desc(const _cl_context* context, const cl_image_desc* desc, size_t element, const void* host_ptr) {
  if (!desc || !is_image_type(desc->image_type) || desc->num_mip_levels || desc->num_samples)
    throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  const Sizes size = extent(*desc);
  if (size[0] == 0 || size[1] == 0 || size[2] == 0) throw ClError{CL_INVALID_IMAGE_SIZE};
  // Pitches describe host memory, or (OpenCL 2.0 and later) the buffer an image is made from.
  if (!host_ptr && !desc->buffer && (desc->image_row_pitch || desc->image_slice_pitch))
    throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  if (desc->image_row_pitch % element || desc->image_slice_pitch % element) throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  // No HiveCL device makes 2D images from buffers (its image pitch alignment reads 0).
  if (desc->image_type == CL_MEM_OBJECT_IMAGE2D && desc->buffer) throw ClError{CL_INVALID_OPERATION};
  const bool from_buffer = desc->image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER;
  if (from_buffer != (desc->buffer != nullptr)) throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  if (from_buffer && (!is_live(desc->buffer, HandleKind::mem) || desc->buffer->image ||
                      desc->buffer->context.get() != context || desc->buffer->size < size[0] * element))
    throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  check_image_size(context, *desc);
  return host_layout(desc->image_type, element, size, desc->image_row_pitch, desc->image_slice_pitch,
                     CL_INVALID_IMAGE_DESCRIPTOR);
}

cl_mem create_image(cl_context context, const cl_mem_properties* properties, cl_mem_flags flags,
                    const cl_image_format* format, const cl_image_desc* desc, void* host_ptr) {
  checked(context);
  if (properties && *properties != 0) throw ClError{CL_INVALID_PROPERTY};
  check_mem_flags(flags, host_ptr);
  if (!supports_images(context)) throw ClError{CL_INVALID_OPERATION};
  const uint32_t element = format ? image_element_size(format->image_channel_order, format->image_channel_data_type) : 0;
  if (element == 0) throw ClError{CL_INVALID_IMAGE_FORMAT_DESCRIPTOR};
  const HostLayout layout = check_desc(context, desc, element, host_ptr);
  if (desc->buffer) derived_flags(desc->buffer->flags, flags);  // what it asks must agree with the buffer's
  // In a spanning context an image is moved whole between parts; one sharing a buffer's storage
  // would be a second record of the buffer's data.
  if (desc->buffer && context->spans()) throw ClError{CL_INVALID_OPERATION};
  const Sizes size = extent(*desc);
  auto mem = std::make_unique<_cl_mem>();
  mem->connection = context->connection;
  mem->id = context->connection->new_id();
  mem->context = Ref<_cl_context>(context);
  mem->flags = flags;  // as made: what it inherits from a buffer is not reported (check_host_access)
  mem->size = packed_bytes(element, size);
  if (flags & CL_MEM_USE_HOST_PTR) mem->host_ptr = host_ptr;
  if (properties) mem->properties = {0};
  mem->image = ImageDescription{*format, *desc, element, layout.row_step, layout.slice_step};
  if (desc->buffer) mem->image_buffer = Ref<_cl_mem>(desc->buffer);
  if (context->spans()) mem->spread = new_spread(context, mem->size, host_ptr != nullptr);
  // As for buffers: the proxy keeps its own copy of host data but where the native runtime uses
  // it itself (native_host_memory); host access flags are enforced here.
  Connection* const connection = context->connection;
  cl_mem_flags wire_flags = flags & ~host_access_flags;
  if ((flags & CL_MEM_USE_HOST_PTR) && !native_host_memory(context))
    wire_flags = (wire_flags & ~CL_MEM_USE_HOST_PTR) | CL_MEM_COPY_HOST_PTR;
  // Host data where the proxy can reach it is named with its pitches (in-process the native
  // runtime reads or uses it, on the memory data path the proxy gathers its rows); over MPI it
  // is sent packed.
  const bool named = host_ptr && connection->moves_by_memory() && desc->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER;
  const bool sent = host_ptr && !named;
  std::unique_ptr<std::byte[]> packed;
  const std::byte* data = static_cast<const std::byte*>(host_ptr);
  if (sent && !is_packed(layout, element, size)) {
    packed.reset(new std::byte[mem->size]);
    copy_region(packed.get(), static_cast<std::byte*>(host_ptr), layout, element, size, false);
    data = packed.get();
  }
  const uint64_t data_bytes = sent ? mem->size : 0;
  CreateImage::Request request = image_creation(*mem, connection, mem->id, wire_flags);
  request.data_bytes = data_bytes;
  if (named) {
    request.host_address = reinterpret_cast<uint64_t>(host_ptr);
    request.row_pitch = desc->image_row_pitch;
    request.slice_pitch = desc->image_slice_pitch;
  }
  connection->call<CreateImage>(request, std::span<const std::byte>(data, data_bytes));
  return publish(mem.release());
}

cl_image_desc legacy_desc(cl_mem_object_type type, size_t width, size_t height, size_t depth, size_t row_pitch,
                          size_t slice_pitch) {
  cl_image_desc desc{};
  desc.image_type = type;
  desc.image_width = width;
  desc.image_height = height;
  desc.image_depth = depth;
  desc.image_row_pitch = row_pitch;
  desc.image_slice_pitch = slice_pitch;
  return desc;
}

// The image argument of an enqueue: a live image (not a buffer) of the queue's context.
_cl_mem* transfer_image(const EnqueuedCommand& command, cl_mem image) {
  _cl_mem* mem = transfer_mem(command, image);
  if (!mem->image) throw ClError{CL_INVALID_MEM_OBJECT};
  return mem;
}

// A region the client reads or writes host memory for: inside the image, not empty.
void check_region(const _cl_mem* image, const size_t* origin, const size_t* region) {
  if (!origin || !region) throw ClError{CL_INVALID_VALUE};
  const Sizes size = extent(image->image->desc);
  for (size_t i = 0; i < 3; ++i)
    if (region[i] == 0 || origin[i] > size[i] || region[i] > size[i] - origin[i]) throw ClError{CL_INVALID_VALUE};
}

// The host memory a region laid out as `layout` spans, from its first byte to its last.
HostRange span(const void* pointer, const HostLayout& layout, size_t element, const Sizes& region) {
  return HostRange::of(pointer, (region[2] - 1) * layout.slice_step + (region[1] - 1) * layout.row_step +
                                    region[0] * element);
}

// How a command that writes `region` of an image uses it (spanning contexts): the rest of the
// image is read too unless the region is all of it (images move whole).
Access writing(const _cl_mem* image, const Sizes& region) {
  return region == extent(image->image->desc) ? Access::writes : Access::reads_writes;
}

// In-process the native runtime applies a layout itself: its pitches as the native calls take
// them. A 1D array's step from one image to the next is its slice pitch by the specification,
// its row pitch for PoCL 3.1 and NVIDIA (found with the CTS's enqueue_map_image): both are set.
InPlace in_place(cl_mem_object_type type, const HostLayout& layout, bool blocking) {
  InPlace in_place{.used = true, .blocking = blocking};
  if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
    in_place.row_pitch = in_place.slice_pitch = layout.row_step;
  } else if (type != CL_MEM_OBJECT_IMAGE1D && type != CL_MEM_OBJECT_IMAGE1D_BUFFER) {
    in_place.row_pitch = layout.row_step;
    if (type != CL_MEM_OBJECT_IMAGE2D) in_place.slice_pitch = layout.slice_step;
  }
  return in_place;
}

// Off the in-process path, the host memory of a region laid out as `layout` as the proxy takes
// it (name_host_memory: in a shared segment such as an image's mapping, or by its address, where
// the proxy gathers or scatters its rows), with its pitches unless packed. Over MPI it is not
// named: the data travels.
template <class Request>
void name_image_memory(Request& request, const Connection* connection, const _cl_mem* image, const void* memory,
                       const HostLayout& layout, const Sizes& region) {
  const size_t element = image->image->element_size;
  const HostRange spanned = span(memory, layout, element, region);
  const NamedHostMemory host = name_host_memory(connection, memory, spanned.end - spanned.begin);
  request.shared = host.shared;
  request.host_address = host.address;
  if ((request.host_address || request.shared.segment) && !is_packed(layout, element, region))
    request.in_place = in_place(image->image->desc.image_type, layout, false);
}

// Device data of a region into host memory laid out as `layout`. In-process the native runtime
// writes the application's memory itself; on the memory data path the proxy writes its rows
// there itself, or the native runtime does, into a shared segment (name_image_memory). Over MPI
// the data arrives straight in the application's memory when the layout is packed; otherwise in
// memory of its own, then unpacked before returning (the read then completes before returning,
// as it may).
void read_region(EnqueuedCommand& command, const _cl_mem* image, const Sizes& origin, const Sizes& region,
                 const HostLayout& layout, void* pointer, bool blocking, cl_command_type type) {
  Connection* connection = command.connection();
  const cl_mem_object_type image_type = image->image->desc.image_type;
  ReadImage::Request request{.queue = command.queue()->id, .image = use_mem(image, command, Access::reads),
                             .origin = coordinates(origin), .region = coordinates(region), .tail = command.tail()};
  if (connection->in_process()) {
    request.host_address = reinterpret_cast<uint64_t>(pointer);
    request.in_place = in_place(image_type, layout, blocking);
    enqueue_in_process<ReadImage>(command, request, request.in_place.blocking, type);
    return;
  }
  const size_t element = image->image->element_size;
  const size_t bytes = packed_bytes(element, region);
  const bool direct = connection->moves_by_memory() || is_packed(layout, element, region);
  std::unique_ptr<std::byte[]> scratch(direct ? nullptr : new std::byte[bytes]);
  void* target = direct ? pointer : scratch.get();
  name_image_memory(request, connection, image, target, layout, region);
  uint64_t sequence = 0;
  connection->call<ReadImage>(request, {}, &sequence);
  auto incoming = connection->receive(sequence, target, bytes);
  command.queue()->add_pending({incoming, command.position(), span(pointer, layout, element, region)});
  command.complete(type, incoming);
  if (!blocking && !scratch) return;
  command.queue()->settle(command.position());
  check(incoming->wait());
  if (scratch) copy_region(scratch.get(), static_cast<std::byte*>(pointer), layout, element, region, true);
}

// Host memory laid out as `layout` to a region of the device; returns once the proxy holds it.
// In-process the native runtime reads the application's memory itself, as natively (an image
// in-process is mapped natively: no memory of HiveCL's own is written from); on the memory data
// path the proxy gathers its rows itself, or the native runtime reads them from a shared segment
// (name_image_memory). Over MPI it travels packed.
void write_region(EnqueuedCommand& command, const _cl_mem* image, const Sizes& origin, const Sizes& region,
                  const HostLayout& layout, const void* pointer, bool blocking, cl_command_type type) {
  const size_t element = image->image->element_size;
  const size_t bytes = packed_bytes(element, region);
  const cl_mem_object_type image_type = image->image->desc.image_type;
  Connection* connection = command.connection();
  WriteImage::Request request{.queue = command.queue()->id, .image = use_mem(image, command, writing(image, region)),
                              .origin = coordinates(origin), .region = coordinates(region), .tail = command.tail(),
                              .data_bytes = bytes};
  if (connection->in_process()) {
    request.host_address = reinterpret_cast<uint64_t>(pointer);
    request.in_place = in_place(image_type, layout, blocking);
    enqueue_in_process<WriteImage>(command, request, request.in_place.blocking, type);
    return;
  }
  // The reads before it that fill this memory must have filled it.
  command.queue()->settle(command.position(), span(pointer, layout, element, region));
  std::unique_ptr<std::byte[]> scratch;
  const void* source = pointer;
  if (!connection->moves_by_memory() && !is_packed(layout, element, region)) {
    scratch.reset(new std::byte[bytes]);
    copy_region(scratch.get(), static_cast<std::byte*>(const_cast<void*>(pointer)), layout, element, region, false);
    source = scratch.get();
  }
  name_image_memory(request, connection, image, source, layout, region);
  connection->call<WriteImage>(request, std::span<const std::byte>(static_cast<const std::byte*>(source),
                                                                   request.bulk_bytes()));
  command.complete(type);
}

// Through a proxy of this node, a segment shared with the proxy for the image's mappings, made
// at the first: the proxy moves their data to and from the device with no copy of its own, as
// for buffers' mappings. Every mapping of the image then reports the same pitches (made at the
// second mapping, the segment would change them between the first and the next; its fresh
// pages make a first mapping cost about what NVIDIA's own does: docs/PERFORMANCE.md). Null
// elsewhere, or where none can be made.
std::byte* shared_mapping_memory(_cl_mem* image) {
  std::lock_guard lock(image->mapping_mutex);
  if (!image->shared_shadow && !image->connection->in_process())
    image->shared_shadow = SharedShadow::create(image->connection, image->size);
  return image->shared_shadow ? image->shared_shadow->data() : nullptr;
}

// Where a mapping of `origin` lies and how: in host_ptr (CL_MEM_USE_HOST_PTR, with the image's
// own layout), in the whole image's packed layout in a shared segment (shared_mapping_memory),
// or else in memory of its own, packed.
_cl_mem::Mapping image_mapping(_cl_mem* image, const Sizes& origin, const Sizes& region, cl_map_flags flags) {
  const ImageDescription& description = *image->image;
  _cl_mem::Mapping mapping{.pointer = nullptr, .offset = 0, .size = 0, .flags = flags, .origin = origin,
                           .region = region};
  const cl_mem_object_type type = description.desc.image_type;
  std::byte* whole_image = static_cast<std::byte*>(image->host_ptr);
  HostLayout layout{description.row_step, description.slice_step};
  if (!whole_image && (whole_image = shared_mapping_memory(image)))
    layout = host_layout(type, description.element_size, extent(description.desc), 0, 0, CL_INVALID_VALUE);
  if (whole_image) {
    mapping.row_step = layout.row_step;
    mapping.slice_step = layout.slice_step;
    mapping.offset = origin[0] * description.element_size + origin[1] * mapping.row_step +
                     origin[2] * mapping.slice_step;
    mapping.pointer = whole_image + mapping.offset;
  } else {
    const HostLayout packed = host_layout(type, description.element_size, region, 0, 0, CL_INVALID_VALUE);
    mapping.row_step = packed.row_step;
    mapping.slice_step = packed.slice_step;
    mapping.storage.reset(new std::byte[packed_bytes(description.element_size, region)]);
    mapping.pointer = mapping.storage.get();
  }
  return mapping;
}

// A mapping in memory of HiveCL's own (or host_ptr). As for buffers, a region mapped for writing
// is fetched too, unless it is invalidated.
_cl_mem::Mapping map_shadow(EnqueuedCommand& command, _cl_mem* image, bool blocking, cl_map_flags flags,
                            const Sizes& origin, const Sizes& region) {
  _cl_mem::Mapping mapping = image_mapping(image, origin, region, flags);
  if (flags & CL_MAP_WRITE_INVALIDATE_REGION) {
    enqueue_marker(command, CL_COMMAND_MAP_IMAGE, false);
  } else {
    read_region(command, image, mapping.origin, mapping.region, {mapping.row_step, mapping.slice_step},
                mapping.pointer, blocking, CL_COMMAND_MAP_IMAGE);
  }
  return mapping;
}

// A mapping of the native runtime's own (native_host_memory), with the pitches it reports.
_cl_mem::Mapping map_natively(EnqueuedCommand& command, const _cl_mem* image, bool blocking, cl_map_flags flags,
                              const Sizes& origin, const Sizes& region) {
  const MapImage::Reply reply = enqueue_in_process<MapImage>(
      command,
      {.queue = command.queue()->id, .image = image->id, .flags = flags, .origin = coordinates(origin),
       .region = coordinates(region), .blocking = blocking, .tail = command.tail()},
      blocking, CL_COMMAND_MAP_IMAGE);
  return {.pointer = reinterpret_cast<std::byte*>(reply.address), .offset = 0, .size = 0, .flags = flags,
          .row_step = reply.row_pitch, .slice_step = reply.slice_pitch};
}

// The pitches clEnqueueMapImage reports for a mapping.
void report_pitches(const _cl_mem* image, const _cl_mem::Mapping& mapping, size_t* row_pitch, size_t* slice_pitch) {
  const cl_mem_object_type type = image->image->desc.image_type;
  *row_pitch = mapping.row_step;
  if (!slice_pitch) return;
  const bool sliced = type == CL_MEM_OBJECT_IMAGE3D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY;
  *slice_pitch = type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? mapping.row_step : sliced ? mapping.slice_step : 0;
}

// The pitches of an image made from host data are those of the host data, as native runtimes
// report them (the proxy's copy is packed). 1D images and arrays report the device's.
std::optional<size_t> host_pitch(const _cl_mem& image, cl_image_info param) {
  const ImageDescription& description = *image.image;
  const cl_mem_object_type type = description.desc.image_type;
  if (!(image.flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR))) return std::nullopt;
  if (param == CL_IMAGE_ROW_PITCH && (type == CL_MEM_OBJECT_IMAGE2D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                                      type == CL_MEM_OBJECT_IMAGE3D))
    return description.row_step;
  if (param == CL_IMAGE_SLICE_PITCH && (type == CL_MEM_OBJECT_IMAGE2D_ARRAY || type == CL_MEM_OBJECT_IMAGE3D))
    return description.slice_step;
  return std::nullopt;
}

}  // namespace

namespace hivecl::icd {

CreateImage::Request image_creation(const _cl_mem& image, const Connection* connection, ObjectId id,
                                    cl_mem_flags flags) {
  const cl_image_desc& desc = image.image->desc;
  const ImageShape shape{.type = desc.image_type, .width = desc.image_width, .height = desc.image_height,
                         .depth = desc.image_depth, .array_size = desc.image_array_size,
                         .buffer = desc.buffer ? desc.buffer->id : no_object};
  const cl_image_format& format = image.image->format;
  return {.id = id, .context = image.context->id_on(connection), .flags = flags,
          .format = {format.image_channel_order, format.image_channel_data_type}, .shape = shape};
}

namespace {

// In-process the native runtime moves a piece between `memory` (packed) and the device itself,
// the call returning once it has; false elsewhere.
template <class M>
bool moved_in_process(Connection* connection, typename M::Request& request, const std::byte* memory) {
  if (!connection->in_process()) return false;
  request.host_address = reinterpret_cast<uint64_t>(memory);
  request.in_place = {.used = true, .blocking = true};
  check(connection->call_blocking_transfer<M>(request));
  return true;
}

// Reads `region` at `origin` of an image into `memory`, packed; returns once it is there.
void read_piece(Connection* connection, ObjectId queue, ObjectId image, const Sizes& origin, const Sizes& region,
                std::byte* memory, size_t bytes) {
  ReadImage::Request request{.queue = queue, .image = image, .origin = coordinates(origin),
                             .region = coordinates(region), .tail = {}};
  if (moved_in_process<ReadImage>(connection, request, memory)) return;
  request.host_address = host_address(connection, memory);
  uint64_t sequence = 0;
  connection->call<ReadImage>(request, {}, &sequence);
  check(connection->receive(sequence, memory, bytes)->wait());
}

// Writes `region` at `origin` of an image from `memory`, packed; returns once the device (in-process)
// or the proxy holds it.
void write_piece(Connection* connection, ObjectId queue, ObjectId image, const Sizes& origin, const Sizes& region,
                 const std::byte* memory, size_t bytes) {
  WriteImage::Request request{.queue = queue, .image = image, .origin = coordinates(origin),
                              .region = coordinates(region), .tail = {}, .data_bytes = bytes};
  if (moved_in_process<WriteImage>(connection, request, memory)) return;
  request.host_address = host_address(connection, memory);
  connection->call<WriteImage>(request, std::span<const std::byte>(memory, request.bulk_bytes()));
}

}  // namespace

void move_image(const _cl_mem* image, Connection* source, ObjectId source_queue, Connection* target,
                ObjectId target_queue, size_t piece_bytes) {
  const size_t element = image->image->element_size;
  const Sizes size = extent(image->image->desc);
  // Pieces of whole layers of its last dimension: slices, rows, or a 1D image's pixels.
  const size_t last = size[2] > 1 ? 2 : size[1] > 1 ? 1 : 0;
  size_t layer = element;
  for (size_t i = 0; i < last; ++i) layer *= size[i];
  const size_t layers = std::max<size_t>(1, piece_bytes / layer);
  const auto region = [&](size_t piece) {
    Sizes part = size;
    part[last] = std::min(layers, size[last] - piece * layers);
    return part;
  };
  const auto origin = [&](size_t piece) {
    Sizes first{};
    first[last] = piece * layers;
    return first;
  };
  relay_pieces(
      (size[last] + layers - 1) / layers, std::min(layers, size[last]) * layer,
      [&](size_t piece, std::byte* memory) {
        read_piece(source, source_queue, image->id_on(source), origin(piece), region(piece), memory,
                   packed_bytes(element, region(piece)));
      },
      [&](size_t piece, const std::byte* memory) {
        write_piece(target, target_queue, image->id_on(target), origin(piece), region(piece), memory,
                    packed_bytes(element, region(piece)));
      });
}

bool supports_images(const _cl_context* context) {
  return std::any_of(context->devices.begin(), context->devices.end(),
                     [](cl_device_id device) { return device_value<cl_bool>(device, CL_DEVICE_IMAGE_SUPPORT); });
}

void unmap_image(EnqueuedCommand& command, _cl_mem* image, const _cl_mem::Mapping& mapping) {
  const bool written = mapping.flags == 0 || (mapping.flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION));
  if (written) {
    write_region(command, image, mapping.origin, mapping.region, {mapping.row_step, mapping.slice_step},
                 mapping.pointer, false, CL_COMMAND_UNMAP_MEM_OBJECT);
  } else {
    command.queue()->settle(command.position());  // the mapping's data has arrived before its memory goes
    enqueue_marker(command, CL_COMMAND_UNMAP_MEM_OBJECT, false);
  }
}

KernelArg image_arg(const _cl_kernel* kernel, const KernelArg& base, const void* value) {
  const cl_mem mem = arg_handle<cl_mem>(base, value);
  if (!mem || !is_live(mem, HandleKind::mem) || !mem->image ||
      (mem->connection != kernel->connection && mem->context.get() != kernel->program->context.get()))
    throw ClError{CL_INVALID_MEM_OBJECT};
  KernelArg arg = base;
  arg.kind = ArgKind::mem_object;
  arg.object = mem->id;
  return arg;
}

}  // namespace hivecl::icd

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format* image_format,
                                              const cl_image_desc* image_desc, void* host_ptr, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] { return create_image(context, nullptr, flags, image_format, image_desc, host_ptr); });
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImageWithProperties(cl_context context, const cl_mem_properties* properties,
                                                            cl_mem_flags flags, const cl_image_format* image_format,
                                                            const cl_image_desc* image_desc, void* host_ptr,
                                                            cl_int* errcode_ret) {
  return guarded_create(errcode_ret,
                        [&] { return create_image(context, properties, flags, image_format, image_desc, host_ptr); });
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage2D(cl_context context, cl_mem_flags flags,
                                                const cl_image_format* image_format, size_t image_width,
                                                size_t image_height, size_t image_row_pitch, void* host_ptr,
                                                cl_int* errcode_ret) {
  const cl_image_desc desc = legacy_desc(CL_MEM_OBJECT_IMAGE2D, image_width, image_height, 0, image_row_pitch, 0);
  return guarded_create(errcode_ret, [&] { return create_image(context, nullptr, flags, image_format, &desc, host_ptr); });
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage3D(cl_context context, cl_mem_flags flags,
                                                const cl_image_format* image_format, size_t image_width,
                                                size_t image_height, size_t image_depth, size_t image_row_pitch,
                                                size_t image_slice_pitch, void* host_ptr, cl_int* errcode_ret) {
  const cl_image_desc desc = legacy_desc(CL_MEM_OBJECT_IMAGE3D, image_width, image_height, image_depth,
                                         image_row_pitch, image_slice_pitch);
  return guarded_create(errcode_ret, [&] { return create_image(context, nullptr, flags, image_format, &desc, host_ptr); });
}

namespace {

std::vector<ImageFormat> supported_formats(const _cl_context* context, Connection* connection, cl_mem_flags flags,
                                           cl_mem_object_type image_type) {
  const GetSupportedImageFormats::Request request{.context = context->id_on(connection), .flags = flags,
                                                  .image_type = image_type};
  return connection->call<GetSupportedImageFormats>(request).formats;
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clGetSupportedImageFormats(cl_context context, cl_mem_flags flags,
                                                           cl_mem_object_type image_type, cl_uint num_entries,
                                                           cl_image_format* image_formats,
                                                           cl_uint* num_image_formats) {
  return guarded([&] {
    checked(context);
    if (!is_image_type(image_type) || (num_entries == 0 && image_formats)) throw ClError{CL_INVALID_VALUE};
    std::vector<ImageFormat> formats;
    if (supports_images(context)) {
      formats = supported_formats(context, context->connection, flags, image_type);
      // A spanning context's images are made on every part where they are used: those all support.
      for (const Replica& part : context->replicas) {
        const std::vector<ImageFormat> there = supported_formats(context, part.connection, flags, image_type);
        std::erase_if(formats, [&](const ImageFormat& f) { return std::ranges::find(there, f) == there.end(); });
      }
    }
    if (num_image_formats) *num_image_formats = static_cast<cl_uint>(formats.size());
    for (size_t i = 0; image_formats && i < std::min<size_t>(num_entries, formats.size()); ++i)
      image_formats[i] = {formats[i].channel_order, formats[i].channel_data_type};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetImageInfo(cl_mem image, cl_image_info param_name, size_t param_value_size,
                                               void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(image);
    if (!image->image) throw ClError{CL_INVALID_MEM_OBJECT};
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_IMAGE_FORMAT: return reply.scalar(image->image->format);
      case CL_IMAGE_ELEMENT_SIZE: return reply.scalar(image->image->element_size);
      case CL_IMAGE_BUFFER: return reply.scalar(static_cast<cl_mem>(image->image_buffer.get()));
      case CL_IMAGE_NUM_MIP_LEVELS:
      case CL_IMAGE_NUM_SAMPLES: return reply.scalar(cl_uint{0});
      case CL_IMAGE_ROW_PITCH:
      case CL_IMAGE_SLICE_PITCH:
        if (const auto pitch = host_pitch(*image, param_name)) return reply.scalar(*pitch);
        [[fallthrough]];
      default: remote_info(image->connection, InfoFamily::image, image->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadImage(cl_command_queue command_queue, cl_mem image, cl_bool blocking_read,
                                                   const size_t* origin, const size_t* region, size_t row_pitch,
                                                   size_t slice_pitch, void* ptr, cl_uint num_events_in_wait_list,
                                                   const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_image(command, image);
    check_region(mem, origin, region);
    if (!ptr) throw ClError{CL_INVALID_VALUE};
    check_host_access(mem, true, false);
    const HostLayout layout = host_layout(mem->image->desc.image_type, mem->image->element_size, sizes_of(region),
                                          row_pitch, slice_pitch, CL_INVALID_VALUE);
    read_region(command, mem, sizes_of(origin), sizes_of(region), layout, ptr, blocking_read, CL_COMMAND_READ_IMAGE);
  });
}

// Through a proxy the data is sent before returning, blocking or not.
CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteImage(cl_command_queue command_queue, cl_mem image,
                                                    cl_bool blocking_write,
                                                    const size_t* origin, const size_t* region, size_t input_row_pitch,
                                                    size_t input_slice_pitch, const void* ptr,
                                                    cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                    cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_image(command, image);
    check_region(mem, origin, region);
    if (!ptr) throw ClError{CL_INVALID_VALUE};
    check_host_access(mem, false, true);
    const HostLayout layout = host_layout(mem->image->desc.image_type, mem->image->element_size, sizes_of(region),
                                          input_row_pitch, input_slice_pitch, CL_INVALID_VALUE);
    write_region(command, mem, sizes_of(origin), sizes_of(region), layout, ptr, blocking_write, CL_COMMAND_WRITE_IMAGE);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyImage(cl_command_queue command_queue, cl_mem src_image,
                                                   cl_mem dst_image, const size_t* src_origin,
                                                   const size_t* dst_origin, const size_t* region,
                                                   cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                   cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* source = transfer_image(command, src_image);
    const _cl_mem* destination = transfer_image(command, dst_image);
    if (!src_origin || !dst_origin || !region) throw ClError{CL_INVALID_VALUE};
    // Bounds, formats and overlap are checked by the device's own implementation.
    const ObjectId source_id = use_mem(source, command, Access::reads);
    const ObjectId destination_id = use_mem(destination, command, writing(destination, sizes_of(region)));
    command.connection()->call<CopyImage>({.queue = command.queue()->id, .source = source_id,
                                           .destination = destination_id,
                                           .source_origin = coordinates(sizes_of(src_origin)),
                                           .destination_origin = coordinates(sizes_of(dst_origin)),
                                           .region = coordinates(sizes_of(region)), .tail = command.tail()});
    command.complete(CL_COMMAND_COPY_IMAGE);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillImage(cl_command_queue command_queue, cl_mem image,
                                                   const void* fill_color, const size_t* origin, const size_t* region,
                                                   cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                   cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_image(command, image);
    if (!fill_color || !origin || !region) throw ClError{CL_INVALID_VALUE};
    // Four 32-bit channels, or one float for a depth image.
    Bytes color(16);
    const bool depth = mem->image->format.image_channel_order == CL_DEPTH;
    std::memcpy(color.data(), fill_color, depth ? sizeof(cl_float) : color.size());
    const ObjectId id = use_mem(mem, command, writing(mem, sizes_of(region)));
    command.connection()->call<FillImage>({.queue = command.queue()->id, .image = id, .color = color,
                                           .origin = coordinates(sizes_of(origin)),
                                           .region = coordinates(sizes_of(region)), .tail = command.tail()});
    command.complete(CL_COMMAND_FILL_IMAGE);
  });
}

namespace {

void copy_image_buffer(EnqueuedCommand& command, cl_mem image, cl_mem buffer, bool to_buffer, const size_t* origin,
                       const size_t* region, size_t buffer_offset) {
  const _cl_mem* image_mem = transfer_image(command, image);
  const _cl_mem* buffer_mem = transfer_mem(command, buffer);
  if (buffer_mem->image) throw ClError{CL_INVALID_MEM_OBJECT};
  if (!origin || !region) throw ClError{CL_INVALID_VALUE};
  // The buffer's range as the device takes it (one it refuses moves nothing: use_mem).
  const Sizes pixels = sizes_of(region);
  const ObjectId image_id = use_mem(image_mem, command, to_buffer ? Access::reads : writing(image_mem, pixels));
  const ObjectId buffer_id = use_mem(buffer_mem, command, to_buffer ? Access::writes : Access::reads, buffer_offset,
                                     packed_bytes_or_none(image_mem->image->element_size, pixels));
  command.connection()->call<CopyImageBuffer>({.queue = command.queue()->id, .image = image_id,
                                               .buffer = buffer_id, .to_buffer = to_buffer,
                                               .origin = coordinates(sizes_of(origin)),
                                               .region = coordinates(sizes_of(region)), .buffer_offset = buffer_offset,
                                               .tail = command.tail()});
  command.complete(to_buffer ? CL_COMMAND_COPY_IMAGE_TO_BUFFER : CL_COMMAND_COPY_BUFFER_TO_IMAGE);
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyImageToBuffer(cl_command_queue command_queue, cl_mem src_image,
                                                           cl_mem dst_buffer, const size_t* src_origin,
                                                           const size_t* region, size_t dst_offset,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    copy_image_buffer(command, src_image, dst_buffer, true, src_origin, region, dst_offset);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBufferToImage(cl_command_queue command_queue, cl_mem src_buffer,
                                                           cl_mem dst_image, size_t src_offset,
                                                           const size_t* dst_origin, const size_t* region,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    copy_image_buffer(command, dst_image, src_buffer, false, dst_origin, region, src_offset);
  });
}

CL_API_ENTRY void* CL_API_CALL clEnqueueMapImage(cl_command_queue command_queue, cl_mem image, cl_bool blocking_map,
                                                 cl_map_flags map_flags, const size_t* origin, const size_t* region,
                                                 size_t* image_row_pitch, size_t* image_slice_pitch,
                                                 cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                 cl_event* event, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> void* {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    _cl_mem* mem = transfer_image(command, image);
    check_region(mem, origin, region);
    const cl_mem_object_type type = mem->image->desc.image_type;
    const bool sliced = type == CL_MEM_OBJECT_IMAGE3D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                        type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    if (!image_row_pitch || (sliced && !image_slice_pitch)) throw ClError{CL_INVALID_VALUE};
    check_map_flags(mem, map_flags);
    _cl_mem::Mapping mapping;
    if (native_host_memory(mem->context.get())) {
      mapping = map_natively(command, mem, blocking_map, map_flags, sizes_of(origin), sizes_of(region));
      *image_row_pitch = mapping.row_step;
      if (image_slice_pitch) *image_slice_pitch = mapping.slice_step;
    } else {
      mapping = map_shadow(command, mem, blocking_map, map_flags, sizes_of(origin), sizes_of(region));
      report_pitches(mem, mapping, image_row_pitch, image_slice_pitch);
    }
    std::lock_guard lock(mem->mapping_mutex);
    mem->mappings.push_back(mapping);
    return mapping.pointer;
  });
}
