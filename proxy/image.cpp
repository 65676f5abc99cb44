// Images on the proxy side: creation, supported formats and transfers. Host data of an
// image travels through the same data path as buffer data: on the memory path through the
// staging ring (staged.hpp), the proxy gathering or scattering the client's rows, or straight
// to or from a shared segment (in_place.hpp); over MPI packed (the client applies the
// application's pitches), in memory of the transfer's own. In-process the native runtime moves
// the application's memory itself (in_place.hpp).
#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "image_format.hpp"
#include "proxy/executors.hpp"
#include "proxy/in_place.hpp"
#include "proxy/staged.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

using Sizes = std::array<size_t, 3>;

Sizes sizes(const Coordinates& c) { return {c.x, c.y, c.z}; }

template <class T>
T image_info(cl_mem image, cl_image_info param) {
  T value{};
  check(clGetImageInfo(image, param, sizeof value, &value, nullptr));
  return value;
}

cl_mem buffer_of(Session& session, ObjectId id) {
  const cl_mem mem = session.get<cl_mem>(id);
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, nullptr));
  if (type != CL_MEM_OBJECT_BUFFER) throw ClError{CL_INVALID_MEM_OBJECT};
  return mem;
}

// Device memory of an image of `shape`, or CL_INVALID_IMAGE_DESCRIPTOR for an unknown type.
// An image made from a buffer holds none of its own.
uint64_t image_bytes(const ImageShape& shape, uint32_t element) {
  switch (shape.type) {
    case CL_MEM_OBJECT_IMAGE1D: return saturating_product(element, shape.width, 1, 1);
    case CL_MEM_OBJECT_IMAGE1D_BUFFER: return 0;
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return saturating_product(element, shape.width, shape.array_size, 1);
    case CL_MEM_OBJECT_IMAGE2D: return saturating_product(element, shape.width, shape.height, 1);
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
      return saturating_product(element, shape.width, shape.height, shape.array_size);
    case CL_MEM_OBJECT_IMAGE3D: return saturating_product(element, shape.width, shape.height, shape.depth);
    default: throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  }
}

// The packed bytes of `region` of `image`; CL_INVALID_VALUE when they cannot lie inside it
// (checked before any memory is set aside; the device checks the exact bounds).
uint64_t region_bytes(cl_mem image, const Coordinates& region) {
  const uint64_t bytes = saturating_product(image_info<size_t>(image, CL_IMAGE_ELEMENT_SIZE), region.x, region.y,
                                            region.z);
  size_t size = 0;
  check(clGetMemObjectInfo(image, CL_MEM_SIZE, sizeof size, &size, nullptr));
  if (bytes > size) throw ClError{CL_INVALID_VALUE};
  return bytes;
}

// clEnqueueReadImage or clEnqueueWriteImage of a request's region, with host memory from `host`
// on laid out with the host pitches given (0: packed; in_place.hpp).
template <class Native, class Request>
auto bind_image(Native native, cl_mem image, const Request& request, void* host, size_t row_pitch, size_t slice_pitch) {
  return [=, origin = sizes(request.origin), region = sizes(request.region)](
             cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list, cl_event* event) {
    return native(queue, image, blocking, origin.data(), region.data(), row_pitch, slice_pitch, host, wait_count,
                  wait_list, event);
  };
}

// The client's side of an image transfer on the memory path: with the pitches it gave (as the
// native calls take them: 0 for the packed value, and a 1D array's images, its rows here, one
// slice pitch apart), its rows in place.
template <class Request>
ClientSide client_side(cl_mem image, const Request& request) {
  ClientSide client{.address = request.host_address, .element = image_info<size_t>(image, CL_IMAGE_ELEMENT_SIZE)};
  const InPlace& host = request.in_place;
  if (!host.used) return client;
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof type, &type, nullptr));
  const bool array_1d = type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
  const uint64_t step = array_1d ? host.slice_pitch : host.row_pitch;
  client.row_pitch = step ? step : request.region.x * client.element;
  client.slice_pitch = host.slice_pitch && !array_1d ? host.slice_pitch : client.row_pitch * request.region.y;
  return client;
}

// A region of an image through the staging ring (staged.hpp), each piece a region of its own.
template <class Native, class Request>
StagedTransfer staged_image(Native native, cl_mem image, const Request& request) {
  return {.region = sizes(request.region),
          .client = client_side(image, request),
          .enqueue = [native, image, origin = sizes(request.origin)](const Enqueue& enqueue, const BoxPiece& piece,
                                                                     std::byte* data, cl_event* event) {
            const size_t at[3] = {origin[0] + piece.origin[0], origin[1] + piece.origin[1], origin[2] + piece.origin[2]};
            return native(enqueue.queue, image, CL_FALSE, at, piece.region.data(), 0, 0, data, enqueue.wait_count(),
                          enqueue.wait_list(), event);
          }};
}

// In-process the native runtime moves the application's memory itself, with its pitches.
template <class Native, class Request>
void image_in_place(Call& call, Native native, const Enqueue& enqueue, cl_mem image, const Request& request,
                    const Replier& status_to) {
  const InPlace& host = request.in_place;
  transfer_in_place(call,
                    bind_image(native, image, request, reinterpret_cast<void*>(request.host_address), host.row_pitch,
                               host.slice_pitch),
                    enqueue, request.queue, request.tail.event, host.blocking, nullptr, status_to);
}

// The bytes of host memory a region spans laid out with a request's pitches (pitched_span), a
// 1D array's images one row apart, with the longer of its two pitches as the step (runtimes
// differ on which they take: client_side).
uint64_t host_span(cl_mem image, const InPlace& host, const Coordinates& region) {
  const uint64_t row = saturating_product(image_info<size_t>(image, CL_IMAGE_ELEMENT_SIZE), region.x, 1, 1);
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof type, &type, nullptr));
  if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
    return pitched_span(row, region.y, region.z, std::max(host.row_pitch, host.slice_pitch), 0);
  return pitched_span(row, region.y, region.z, host.row_pitch, host.slice_pitch);
}

// Host memory in a shared segment (an image's mapping, through a proxy of this node): the
// native runtime moves the region straight to or from the segment's page-locked mapping, with
// the client's pitches (transfer_with_segment).
template <class Native, class Request>
cl_event image_with_segment(Call& call, Native native, const Enqueue& enqueue, cl_mem image, const Request& request,
                            std::function<void(cl_int)> done) {
  const InPlace& host = request.in_place;
  auto [segment, memory] = segment_memory(call, enqueue, request.shared, host_span(image, host, request.region));
  return transfer_with_segment(bind_image(native, image, request, memory, host.row_pitch, host.slice_pitch), enqueue,
                               std::move(segment), std::move(done));
}

}  // namespace

cl_mem image_of(Session& session, ObjectId id, cl_mem_object_type* type) {
  const cl_mem mem = session.get<cl_mem>(id);
  cl_mem_object_type found = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof found, &found, nullptr));
  if (found == CL_MEM_OBJECT_BUFFER) throw ClError{CL_INVALID_MEM_OBJECT};
  if (type) *type = found;
  return mem;
}

std::pair<std::array<size_t, 3>, size_t> image_layout(cl_mem image) {
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof type, &type, nullptr));
  const auto extent = image_extent(type, image_info<size_t>(image, CL_IMAGE_WIDTH),
                                   image_info<size_t>(image, CL_IMAGE_HEIGHT), image_info<size_t>(image, CL_IMAGE_DEPTH),
                                   image_info<size_t>(image, CL_IMAGE_ARRAY_SIZE));
  return {{extent[0], extent[1], extent[2]}, image_info<size_t>(image, CL_IMAGE_ELEMENT_SIZE)};
}

GetSupportedImageFormats::Reply execute(Call& call, const GetSupportedImageFormats::Request& request) {
  const cl_context context = call.session.get<cl_context>(request.context);
  cl_uint count = 0;
  check(clGetSupportedImageFormats(context, request.flags, request.image_type, 0, nullptr, &count));
  std::vector<cl_image_format> formats(count);
  if (count) check(clGetSupportedImageFormats(context, request.flags, request.image_type, count, formats.data(), nullptr));
  GetSupportedImageFormats::Reply reply;
  for (const cl_image_format& format : formats)
    reply.formats.push_back({format.image_channel_order, format.image_channel_data_type});
  return reply;
}

namespace {

Coordinates whole_image(const ImageShape& shape) {
  const auto pixels = image_extent(shape.type, shape.width, shape.height, shape.depth, shape.array_size);
  return {pixels[0], pixels[1], pixels[2]};
}

// The image of a request made by the native runtime from its initial contents, if any: packed
// as bulk data, or in-process where the application has them, with its pitches. The runtime
// copies them before returning, or (CL_MEM_USE_HOST_PTR) keeps using them.
cl_mem create_native(Call& call, cl_context context, const cl_image_format& format, cl_image_desc desc,
                     const CreateImage::Request& request) {
  Session::Bulk data;
  if (request.data_bytes) data = call.session.receive_bulk(call.sequence, request.data_bytes);
  call.bulk_consumed = true;
  desc.image_row_pitch = request.row_pitch;
  desc.image_slice_pitch = request.slice_pitch;
  void* host = request.host_address ? reinterpret_cast<void*>(request.host_address) : const_cast<std::byte*>(data.bytes);
  cl_int status = CL_SUCCESS;
  const cl_mem image = clCreateImage(context, request.flags, &format, &desc, host, &status);
  check(status);
  return image;
}

// The first device of the context that supports images (the image was made, so one does).
cl_device_id image_device(cl_context context) {
  const std::vector<cl_device_id> devices = context_devices(context);
  const auto supports = std::find_if(devices.begin(), devices.end(), [](cl_device_id device) {
    cl_bool images = CL_FALSE;
    return clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr) == CL_SUCCESS && images;
  });
  return supports == devices.end() ? devices.front() : *supports;
}

// On the memory data path: the image made empty, then filled through the staging ring with the
// rows the proxy gathers from the client's memory (fill_staged), as a write of the whole image.
cl_mem create_staged(Call& call, cl_context context, const cl_image_format& format, const cl_image_desc& desc,
                     const CreateImage::Request& request) {
  cl_int status = CL_SUCCESS;
  const cl_mem image =
      clCreateImage(context, request.flags & ~cl_mem_flags{CL_MEM_COPY_HOST_PTR}, &format, &desc, nullptr, &status);
  check(status);
  const WriteImage::Request whole{.origin = {0, 0, 0},
                                  .region = whole_image(request.shape),
                                  .host_address = request.host_address,
                                  .in_place = {.used = true, .row_pitch = request.row_pitch,
                                               .slice_pitch = request.slice_pitch}};
  fill_staged(call, context, image_device(context), image, staged_image(clEnqueueWriteImage, image, whole));
  return image;
}

}  // namespace

CreateImage::Reply execute(Call& call, const CreateImage::Request& request) {
  Session& session = call.session;
  const cl_context context = session.get<cl_context>(request.context);
  const uint32_t element = image_element_size(request.format.channel_order, request.format.channel_data_type);
  if (element == 0) throw ClError{CL_INVALID_IMAGE_FORMAT_DESCRIPTOR};
  const uint64_t bytes = image_bytes(request.shape, element);
  session.check_fresh(request.id, bytes);
  // An image made from a buffer names one large enough; no other image names one.
  const bool from_buffer = request.shape.type == CL_MEM_OBJECT_IMAGE1D_BUFFER;
  if (from_buffer != (request.shape.buffer != no_object)) throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  const uint64_t data_bytes = from_buffer ? saturating_product(element, request.shape.width, 1, 1) : bytes;
  // Initial contents come packed as bulk data, or named where they lie with the application's
  // pitches: in-process, for the native runtime to read or (CL_MEM_USE_HOST_PTR, only there)
  // use; on the memory data path, for the proxy to read.
  const bool uses = (request.flags & CL_MEM_USE_HOST_PTR) != 0;
  const bool copies = (request.flags & CL_MEM_COPY_HOST_PTR) != 0;
  const bool named = request.host_address != 0;
  const bool proxy_reads = named && session.data_path().kind() == transport::DataPath::memory;
  bool valid = false;
  if (named) {
    const bool path_allows = in_process(session) ? uses || copies : proxy_reads && copies;
    valid = path_allows && request.data_bytes == 0 && !from_buffer;
  } else {
    valid = !uses && !request.row_pitch && !request.slice_pitch && request.data_bytes == (copies ? data_bytes : 0);
  }
  if (!valid) throw ClError{CL_INVALID_VALUE};
  cl_image_desc desc{};
  desc.image_type = request.shape.type;
  desc.image_width = request.shape.width;
  desc.image_height = request.shape.height;
  desc.image_depth = request.shape.depth;
  desc.image_array_size = request.shape.array_size;
  if (from_buffer) {
    desc.buffer = buffer_of(session, request.shape.buffer);
    size_t size = 0;
    check(clGetMemObjectInfo(desc.buffer, CL_MEM_SIZE, sizeof size, &size, nullptr));
    if (data_bytes > size) throw ClError{CL_INVALID_IMAGE_DESCRIPTOR};
  }
  const cl_image_format format{request.format.channel_order, request.format.channel_data_type};
  const cl_mem image =
      proxy_reads ? create_staged(call, context, format, desc, request) : create_native(call, context, format, desc, request);
  session.add(request.id, ObjectKind::mem, image, bytes);
  return {};
}

// On the memory data path the device fills staging slots piece by piece, each going to the
// client once filled; over MPI it fills memory of the read's own, which goes once the read has
// completed. The reply comes once the read is enqueued, the status after the data. In-process
// the native runtime writes the application's memory itself, with its pitches.
void execute(Call& call, const ReadImage::Request& request, const Replier& later) {
  Session& session = call.session;
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem image = image_of(session, request.image);
  check_data_path(session, request.host_address);
  check_host_memory(session, request);
  const uint64_t bytes = region_bytes(image, request.region);
  session.statistics().count_to_client(bytes);
  if (in_process(session) && request.in_place.used) {
    image_in_place(call, clEnqueueReadImage, enqueue, image, request, later);
    confirm_in_place<ReadImage>(request, later);
    return;
  }
  if (request.shared.segment) {
    const cl_event event = image_with_segment(call, clEnqueueReadImage, enqueue, image, request,
                                              [later](cl_int status) { later.send_status(status); });
    later.reply<ReadImage>(CL_SUCCESS);
    keep_event(call, request.tail.event, event);
    return;
  }
  if (session.data_path().kind() == transport::DataPath::memory)
    return read_staged(call, enqueue, staged_image(clEnqueueReadImage, image, request), later,
                       [&] { later.reply<ReadImage>(CL_SUCCESS); }, request.tail.event);
  const auto data = std::make_shared<HostBuffer>(bytes);
  cl_event event = nullptr;
  check(bind_image(clEnqueueReadImage, image, request, data->data.get(), 0, 0)(
      enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  clFlush(enqueue.queue);
  later.reply<ReadImage>(CL_SUCCESS);
  deliver_when_filled(session, event, later, request.host_address, data);
  keep_event(call, request.tail.event, event);
}

void execute(Call& call, const WriteImage::Request& request, const Replier& later) {
  Session& session = call.session;
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem image = image_of(session, request.image);
  check_data_path(session, request.host_address);
  check_host_memory(session, request);
  if (request.data_bytes != region_bytes(image, request.region)) throw ClError{CL_INVALID_VALUE};
  if (in_process(session) && request.in_place.used) {
    call.bulk_consumed = true;
    session.statistics().count_to_proxy(request.data_bytes);
    image_in_place(call, clEnqueueWriteImage, enqueue, image, request, later);
    confirm_in_place<WriteImage>(request, later);
    return;
  }
  if (request.shared.segment) {  // answered once the device has read the segment
    call.bulk_consumed = true;
    session.statistics().count_to_proxy(request.data_bytes);
    keep_event(call, request.tail.event,
               image_with_segment(call, clEnqueueWriteImage, enqueue, image, request,
                                  [later](cl_int status) { later.reply<WriteImage>(status); }));
    return;
  }
  if (session.data_path().kind() == transport::DataPath::memory) {
    session.statistics().count_to_proxy(request.data_bytes);
    keep_event(call, request.tail.event, write_staged(call, enqueue, staged_image(clEnqueueWriteImage, image, request)));
    later.reply<WriteImage>(CL_SUCCESS);
    return;
  }
  const auto data = receive_data(call, request.host_address, request.data_bytes);
  cl_event event = nullptr;
  check(bind_image(clEnqueueWriteImage, image, request, data->data.get(), 0, 0)(
      enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  clFlush(enqueue.queue);
  hold_until_complete(event, data);
  keep_event(call, request.tail.event, event);
  later.reply<WriteImage>(CL_SUCCESS);
}

void execute(Call& call, const MapImage::Request& request, const Replier& later) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem image = image_of(call.session, request.image);
  map_natively<MapImage>(call,
                         [image, flags = request.flags, origin = sizes(request.origin), region = sizes(request.region)](
                             cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list,
                             cl_event* event, cl_int* status) -> MapImage::Reply {
                           size_t row_pitch = 0, slice_pitch = 0;
                           void* address = clEnqueueMapImage(queue, image, blocking, flags, origin.data(),
                                                             region.data(), &row_pitch, &slice_pitch, wait_count,
                                                             wait_list, event, status);
                           return {.address = reinterpret_cast<uint64_t>(address), .row_pitch = row_pitch,
                                   .slice_pitch = slice_pitch};
                         },
                         enqueue, request.tail.event, request.blocking, later);
}

CopyImage::Reply execute(Call& call, const CopyImage::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem source = image_of(call.session, request.source);
  const cl_mem destination = image_of(call.session, request.destination);
  const Sizes source_origin = sizes(request.source_origin), destination_origin = sizes(request.destination_origin),
              region = sizes(request.region);
  cl_event event = nullptr;
  check(clEnqueueCopyImage(enqueue.queue, source, destination, source_origin.data(), destination_origin.data(),
                           region.data(), enqueue.wait_count(), enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

namespace {

// A fill of a 3D image made once what it follows has ended. NVIDIA's clEnqueueFillImage of a
// 3D image returns only once every command ahead of it (in its wait list or its queue) has
// ended (docs/FINDINGS.md): made by the session's worker it would keep the requests that end
// them (a user event's status, the data of a move landing) from ever running. So the queue
// gets a marker of what the fill follows, then one waiting for a user event of the fill's own
// (the command's event); once the first has ended the fill is made alone, on a queue of its
// own, and its end (or failure) sets that user event.
struct HeldFill {
  cl_context context;
  cl_device_id device;
  cl_mem image;  // retained until the fill is enqueued
  Bytes color;
  Sizes origin, region;
  cl_event ended;  // the user event the command's marker waits for; this fill's reference

  // Once what the fill follows has reached `status`.
  void run(cl_int status) {
    cl_event filled = nullptr;
    if (status == CL_COMPLETE) status = fill_alone(&filled);
    clReleaseMemObject(image);
    if (!filled) return set_and_release(ended, status);
    when_complete(filled, [ended = ended](cl_int reached) { set_and_release(ended, reached); });
    clReleaseEvent(filled);
  }

 private:
  cl_int fill_alone(cl_event* filled) const {
    cl_int status = CL_SUCCESS;
    const cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
    if (status != CL_SUCCESS) return status;
    status = clEnqueueFillImage(queue, image, color.data(), origin.data(), region.data(), 0, nullptr, filled);
    clFlush(queue);
    clReleaseCommandQueue(queue);
    return status;
  }
  static void set_and_release(cl_event event, cl_int reached) {
    clSetUserEventStatus(event, reached < 0 ? reached : CL_COMPLETE);
    clReleaseEvent(event);
  }
};

// What the native call would refuse at once, the fill being made later: an image of another
// context, a region empty or past the image's edge.
void check_fill(const Enqueue& enqueue, cl_mem image, const Sizes& origin, const Sizes& region) {
  cl_context context = nullptr;
  check(clGetMemObjectInfo(image, CL_MEM_CONTEXT, sizeof context, &context, nullptr));
  if (context != enqueue.facts.context) throw ClError{CL_INVALID_CONTEXT};
  const Sizes extent = {image_info<size_t>(image, CL_IMAGE_WIDTH), image_info<size_t>(image, CL_IMAGE_HEIGHT),
                        image_info<size_t>(image, CL_IMAGE_DEPTH)};
  for (size_t i = 0; i < 3; ++i)
    if (region[i] == 0 || origin[i] > extent[i] || region[i] > extent[i] - origin[i]) throw ClError{CL_INVALID_VALUE};
}

// The command's event of a fill made through HeldFill.
cl_event fill_when_ended(const Enqueue& enqueue, cl_mem image, const FillImage::Request& request) {
  const Sizes origin = sizes(request.origin), region = sizes(request.region);
  check_fill(enqueue, image, origin, region);
  cl_int status = CL_SUCCESS;
  const cl_event ended = clCreateUserEvent(enqueue.facts.context, &status);
  check(status);
  cl_event ahead = nullptr, event = nullptr;
  status = clEnqueueMarkerWithWaitList(enqueue.queue, enqueue.wait_count(), enqueue.wait_list(), &ahead);
  if (status == CL_SUCCESS) {
    note_wait_list(enqueue.queue, {ended}, {ended});  // the queue's later commands wait for a user event
    status = clEnqueueMarkerWithWaitList(enqueue.queue, 1, &ended, &event);
  }
  if (status != CL_SUCCESS) {  // nothing waits for `ended`; a marker of `ahead` alone ends by itself
    if (ahead) clReleaseEvent(ahead);
    clReleaseEvent(ended);
    throw ClError{status};
  }
  clRetainMemObject(image);
  auto fill = std::make_shared<HeldFill>(HeldFill{.context = enqueue.facts.context, .device = enqueue.facts.device,
                                                  .image = image, .color = request.color, .origin = origin,
                                                  .region = region, .ended = ended});
  when_complete(ahead, [fill](cl_int reached) { fill->run(reached); });
  clReleaseEvent(ahead);
  return event;
}

}  // namespace

FillImage::Reply execute(Call& call, const FillImage::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  cl_mem_object_type type = 0;
  const cl_mem image = image_of(call.session, request.image, &type);
  if (request.color.size() != 16) throw ClError{CL_INVALID_VALUE};
  cl_event event = nullptr;
  if (type == CL_MEM_OBJECT_IMAGE3D) {
    event = fill_when_ended(enqueue, image, request);
  } else {
    const Sizes origin = sizes(request.origin), region = sizes(request.region);
    check(clEnqueueFillImage(enqueue.queue, image, request.color.data(), origin.data(), region.data(),
                             enqueue.wait_count(), enqueue.wait_list(), &event));
  }
  keep_event(call, request.tail.event, event);
  return {};
}

CopyImageBuffer::Reply execute(Call& call, const CopyImageBuffer::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem image = image_of(call.session, request.image);
  const cl_mem buffer = buffer_of(call.session, request.buffer);
  const Sizes origin = sizes(request.origin), region = sizes(request.region);
  cl_event event = nullptr;
  check(request.to_buffer
            ? clEnqueueCopyImageToBuffer(enqueue.queue, image, buffer, origin.data(), region.data(),
                                         request.buffer_offset, enqueue.wait_count(), enqueue.wait_list(), &event)
            : clEnqueueCopyBufferToImage(enqueue.queue, buffer, image, request.buffer_offset, origin.data(),
                                         region.data(), enqueue.wait_count(), enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

}  // namespace hivecl::proxy
