// Shared virtual memory on the client side: coarse-grained buffers (CL_DEVICE_SVM_CAPABILITIES).
// An allocation is the native runtime's clSVMAlloc on the proxy, with a buffer over it (protocol
// SvmAlloc) through which HiveCL's transfers, copies, fills and mappings reach it as a buffer's.
// Through a proxy the application sees the allocation at the address the proxy's runtime gave
// it: memory of HiveCL's own mapped at that address here (the mirror), filled at a map and written
// back at an unmap, as coarse-grained sharing lets an implementation do, so that a pointer stored
// in SVM means the same on the host and on the device. In-process the memory is the runtime's own,
// and a mapping of it the runtime's SVM map (proxy/memory.cpp).
#include <CL/cl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "icd/api.hpp"
#include "icd/shared_memory.hpp"
#include "icd/svm.hpp"
#include "log.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

constexpr cl_svm_mem_flags svm_access_flags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;

// Through a proxy, the memory of HiveCL's own at an allocation's addresses here: its pages
// alone, in a segment the proxy of this node maps too (maps and unmaps then move the data with
// no copy, as for mapped buffers); or anonymous memory, whose first and last pages it may share
// with neighbours.
enum class Mirror { none, shared, anonymous };

struct Allocation {
  std::byte* base = nullptr;
  size_t size = 0;
  Ref<_cl_mem> buffer;  // the buffer over it on the proxy; its release frees the allocation there
  Mirror mirror = Mirror::none;
  std::unique_ptr<SharedShadow> segment;  // Mirror::shared
  std::byte* end() const { return base + size; }
};

uintptr_t page_size() {
  static const auto size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}
uintptr_t page_of(const std::byte* address) { return reinterpret_cast<uintptr_t>(address) & ~(page_size() - 1); }
uintptr_t page_after(const std::byte* end) { return page_of(end + page_size() - 1); }

// Every SVM allocation of the process, by address. Allocations never overlap; two may share a
// page (small ones from one proxy's heap), whose mirror then serves both.
class Allocations {
 public:
  // Records `allocation` (moved from), mirrored first where it must be; false (nothing recorded,
  // nothing taken) where its addresses are taken in this process.
  bool add(Allocation& allocation) {
    std::lock_guard lock(mutex_);
    const auto next = by_base_.lower_bound(allocation.base);
    if ((next != by_base_.end() && next->second.base < allocation.end()) ||
        (next != by_base_.begin() && std::prev(next)->second.end() > allocation.base))
      return false;
    if (allocation.mirror != Mirror::none && !mirror(allocation)) return false;
    by_base_.emplace(allocation.base, std::move(allocation));
    return true;
  }

  // The allocation of `context` at `base`, no longer recorded nor mirrored.
  std::optional<Allocation> remove(const _cl_context* context, const void* base) {
    std::lock_guard lock(mutex_);
    const auto found = by_base_.find(static_cast<const std::byte*>(base));
    if (found == by_base_.end() || found->second.buffer->context.get() != context) return std::nullopt;
    Allocation allocation = std::move(found->second);
    by_base_.erase(found);
    if (allocation.mirror == Mirror::anonymous) {
      const auto [first, end] = own_pages(allocation);
      if (first < end) munmap(reinterpret_cast<void*>(first), end - first);
    }
    allocation.segment.reset();  // unmapped
    return allocation;
  }

  std::optional<SvmRegion> find(const _cl_context* context, const void* pointer, bool end_too) {
    const auto* address = static_cast<const std::byte*>(pointer);
    std::lock_guard lock(mutex_);
    auto after = by_base_.upper_bound(address);
    if (after == by_base_.begin()) return std::nullopt;
    const Allocation& allocation = std::prev(after)->second;
    const bool inside = address < allocation.end() || (end_too && address == allocation.end());
    if (!inside || allocation.buffer->context.get() != context) return std::nullopt;
    return SvmRegion{.buffer = allocation.buffer,
                     .offset = static_cast<size_t>(address - allocation.base),
                     .room = static_cast<size_t>(allocation.end() - address)};
  }

 private:
  // The pages of `allocation` that no other allocation's anonymous mirror holds: all but its
  // first and last where a neighbour's reaches them (allocations do not overlap, so only those
  // can be shared).
  std::pair<uintptr_t, uintptr_t> own_pages(const Allocation& allocation) const {
    uintptr_t first = page_of(allocation.base), end = page_after(allocation.end());
    const auto next = by_base_.lower_bound(allocation.base);
    if (next != by_base_.begin()) {
      const Allocation& before = std::prev(next)->second;
      if (before.mirror == Mirror::anonymous && page_after(before.end()) > first) first += page_size();
    }
    if (next != by_base_.end() && next->second.mirror == Mirror::anonymous && page_of(next->second.base) < end &&
        end > first)
      end -= page_size();
    return {first, std::max(first, end)};
  }

  bool mirror(Allocation& allocation) const {
    const auto [first, end] = own_pages(allocation);
    if (first == end) return true;
    void* wanted = reinterpret_cast<void*>(first);
    if (first == page_of(allocation.base) && end == page_after(allocation.end())) {
      allocation.segment = SharedShadow::create(allocation.buffer->connection, end - first, wanted);
      if (allocation.segment) {
        allocation.mirror = Mirror::shared;
        return true;
      }
    }
    void* mapped = mmap(wanted, end - first, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                        -1, 0);
    if (mapped == wanted) return true;
    if (mapped != MAP_FAILED) munmap(mapped, end - first);  // a kernel without MAP_FIXED_NOREPLACE
    return false;
  }

  std::mutex mutex_;
  std::map<const std::byte*, Allocation> by_base_;
};

Allocations& allocations() {
  static auto* all = new Allocations;  // never destroyed: the application may free SVM at exit
  return *all;
}

// Fine-grained buffers and SVM atomics are not offered (CL_DEVICE_SVM_CAPABILITIES).
bool supported_flags(cl_svm_mem_flags flags) {
  return (flags & ~svm_access_flags) == 0 && std::popcount(flags) <= 1;
}

// An allocation on the proxy, not yet recorded.
Allocation allocate(cl_context context, cl_svm_mem_flags access, size_t size, cl_uint alignment) {
  auto mem = std::make_unique<_cl_mem>();
  mem->connection = context->connection;
  mem->id = context->connection->new_id();
  mem->context = Ref<_cl_context>(context);
  mem->flags = access | CL_MEM_USE_HOST_PTR;
  mem->size = size;
  const SvmAlloc::Reply reply = context->connection->call<SvmAlloc>(
      {.id = mem->id, .context = context->id, .flags = access, .size = size, .alignment = alignment});
  mem->host_ptr = reinterpret_cast<void*>(reply.address);
  Allocation allocation{.base = static_cast<std::byte*>(mem->host_ptr), .size = size,
                        .buffer = Ref<_cl_mem>(mem.release()),
                        .mirror = native_host_memory(context) ? Mirror::none : Mirror::anonymous};
  allocation.buffer->refs.fetch_sub(1, std::memory_order_relaxed);  // the Ref is its only holder
  return allocation;
}

// Tries again where the address the proxy chose is taken here (its own memory, or another
// proxy's allocation): the refused ones are kept until the end, so that the runtime does not
// give the same address again.
constexpr int allocation_attempts = 4;

void* svm_alloc(cl_context context, cl_svm_mem_flags flags, size_t size, cl_uint alignment) {
  checked(context);
  if (!supported_flags(flags) || size == 0 || size > max_alloc_size(context) ||
      (alignment != 0 && !std::has_single_bit(alignment)) || !supports_svm(context))
    return nullptr;
  // A context of several proxies has no one address space to put an allocation in.
  if (context->spans()) return nullptr;
  const cl_svm_mem_flags access = flags != 0 ? flags : CL_MEM_READ_WRITE;
  std::vector<Allocation> refused;
  for (int attempt = 0; attempt < allocation_attempts; ++attempt) {
    Allocation allocation = allocate(context, access, size, alignment);
    std::byte* base = allocation.base;
    if (allocations().add(allocation)) return base;
    refused.push_back(std::move(allocation));
  }
  log::warn("clSVMAlloc: the addresses the proxy's runtime chose are taken in this process (", allocation_attempts,
            " tries)");
  return nullptr;
}

// The SVM region of a command at `pointer`, `size` bytes long, in the queue's context.
SvmRegion svm_region(const EnqueuedCommand& command, const void* pointer, size_t size) {
  if (!pointer || size == 0) throw ClError{CL_INVALID_VALUE};
  std::optional<SvmRegion> region = find_svm(command.queue()->context.get(), pointer);
  if (!region || size > region->room) throw ClError{CL_INVALID_VALUE};
  return std::move(*region);
}

bool overlap(const void* a, const void* b, size_t size) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y ? y - x < size : x - y < size;
}

// A marker of `queue` after `wait_list`, standing for a command of `type` that libhivecl carries
// out itself once the marker has ended.
cl_event marker_for(cl_command_queue queue, cl_command_type type, cl_uint wait_count, const cl_event* wait_list) {
  cl_event marker = nullptr;
  check(clEnqueueMarkerWithWaitList(queue, wait_count, wait_list, &marker));
  marker->command_type = type;
  return marker;
}

// The end of such a command's enqueue: its marker goes to the application where it asked for the
// event and all went well, and is released otherwise; a failure is thrown.
void hand_over(cl_event marker, cl_event* event, cl_int status) {
  if (event && status == CL_SUCCESS) {
    *event = marker;
  } else {
    clReleaseEvent(marker);
  }
  check(status);
}

// Host memory to host memory (neither address is SVM): copied here once a marker of the queue
// has ended, so the enqueue waits for the commands before it.
void copy_host_memory(cl_command_queue queue, void* destination, const void* source, size_t size,
                      cl_uint wait_count, const cl_event* wait_list, cl_event* event) {
  cl_event marker = marker_for(queue, CL_COMMAND_SVM_MEMCPY, wait_count, wait_list);
  const cl_int status = clWaitForEvents(1, &marker);
  if (status == CL_SUCCESS) std::memcpy(destination, source, size);
  hand_over(marker, event, status);
}

// A clEnqueueSVMFree waiting for its marker's end.
struct PendingFree {
  Ref<_cl_command_queue> queue;
  std::vector<void*> pointers;
  void(CL_CALLBACK* free_function)(cl_command_queue, cl_uint, void*[], void*) = nullptr;
  void* user_data = nullptr;
};

void CL_CALLBACK run_pending_free(cl_event, cl_int, void* data) {
  const std::unique_ptr<PendingFree> pending(static_cast<PendingFree*>(data));
  if (pending->free_function) {
    pending->free_function(pending->queue.get(), static_cast<cl_uint>(pending->pointers.size()),
                           pending->pointers.data(), pending->user_data);
    return;
  }
  for (void* pointer : pending->pointers) clSVMFree(pending->queue->context.get(), pointer);
}

}  // namespace

namespace hivecl::icd {

std::optional<SvmRegion> find_svm(const _cl_context* context, const void* pointer, bool end_too) {
  return allocations().find(context, pointer, end_too);
}

bool supports_svm(const _cl_context* context) {
  return std::any_of(context->devices.begin(), context->devices.end(), [](cl_device_id device) {
    return (device_value<cl_device_svm_capabilities>(device, CL_DEVICE_SVM_CAPABILITIES) &
            CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
  });
}

}  // namespace hivecl::icd

CL_API_ENTRY void* CL_API_CALL clSVMAlloc(cl_context context, cl_svm_mem_flags flags, size_t size, cl_uint alignment) {
  void* allocation = nullptr;
  guarded([&] { allocation = svm_alloc(context, flags, size, alignment); });
  return allocation;
}

// An address that is no allocation's start is ignored (the specification leaves it undefined).
CL_API_ENTRY void CL_API_CALL clSVMFree(cl_context context, void* svm_pointer) {
  guarded([&] {
    checked(context);
    if (svm_pointer) allocations().remove(context, svm_pointer);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMFree(cl_command_queue command_queue, cl_uint num_svm_pointers,
                                                 void* svm_pointers[],
                                                 void(CL_CALLBACK* pfn_free_func)(cl_command_queue, cl_uint, void*[],
                                                                                  void*),
                                                 void* user_data, cl_uint num_events_in_wait_list,
                                                 const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    checked(command_queue);
    if ((num_svm_pointers == 0) != (svm_pointers == nullptr)) throw ClError{CL_INVALID_VALUE};
    auto pending = std::make_unique<PendingFree>(PendingFree{
        .queue = Ref<_cl_command_queue>(command_queue),
        .pointers = std::vector<void*>(svm_pointers, svm_pointers + num_svm_pointers),
        .free_function = pfn_free_func, .user_data = user_data});
    const cl_event marker =
        marker_for(command_queue, CL_COMMAND_SVM_FREE, num_events_in_wait_list, event_wait_list);
    const cl_int status = clSetEventCallback(marker, CL_COMPLETE, run_pending_free, pending.get());
    if (status == CL_SUCCESS) pending.release();  // run_pending_free's now
    hand_over(marker, event, status);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMemcpy(cl_command_queue command_queue, cl_bool blocking_copy,
                                                   void* dst_ptr, const void* src_ptr, size_t size,
                                                   cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                   cl_event* event) {
  return guarded([&] {
    const _cl_context* context = checked(command_queue)->context.get();
    if (!dst_ptr || !src_ptr) throw ClError{CL_INVALID_VALUE};
    if (overlap(dst_ptr, src_ptr, size)) throw ClError{CL_MEM_COPY_OVERLAP};
    const std::optional<SvmRegion> to = find_svm(context, dst_ptr), from = find_svm(context, src_ptr);
    if ((to && size > to->room) || (from && size > from->room)) throw ClError{CL_INVALID_VALUE};
    if (!to && !from)
      return copy_host_memory(command_queue, dst_ptr, src_ptr, size, num_events_in_wait_list, event_wait_list, event);
    // A blocking copy between two allocations waits for its event (HiveCL's own if none is asked for).
    cl_event own_event = nullptr;
    cl_event* copy_event = event || !(blocking_copy && to && from) ? event : &own_event;
    {
      EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, copy_event);
      if (to && from) {
        copy_buffer(command, from->buffer.get(), to->buffer.get(), from->offset, to->offset, size,
                    CL_COMMAND_SVM_MEMCPY);
      } else if (to) {
        write_from(command, to->buffer.get(), to->offset, size, src_ptr, blocking_copy, CL_COMMAND_SVM_MEMCPY);
      } else {
        read_into(command, from->buffer.get(), from->offset, size, dst_ptr, blocking_copy, CL_COMMAND_SVM_MEMCPY);
      }
    }
    if (!(blocking_copy && to && from)) return;
    const cl_int status = clWaitForEvents(1, copy_event);
    if (own_event) clReleaseEvent(own_event);
    check(status);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMemFill(cl_command_queue command_queue, void* svm_ptr,
                                                    const void* pattern, size_t pattern_size, size_t size,
                                                    cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                    cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    if (!pattern || pattern_size == 0 || !std::has_single_bit(pattern_size) ||
        reinterpret_cast<uintptr_t>(svm_ptr) % pattern_size != 0 || size % pattern_size != 0)
      throw ClError{CL_INVALID_VALUE};
    const SvmRegion region = svm_region(command, svm_ptr, size);
    fill_buffer(command, region.buffer.get(), pattern, pattern_size, region.offset, size, CL_COMMAND_SVM_MEMFILL);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMap(cl_command_queue command_queue, cl_bool blocking_map,
                                                cl_map_flags flags, void* svm_ptr, size_t size,
                                                cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const SvmRegion region = svm_region(command, svm_ptr, size);
    check_map_flags(region.buffer.get(), flags);
    if (map_buffer(command, region.buffer.get(), blocking_map, flags, region.offset, size, CL_COMMAND_SVM_MAP) !=
        svm_ptr)
      log::warn("clEnqueueSVMMap: the native runtime mapped an SVM region at another address");
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMUnmap(cl_command_queue command_queue, void* svm_ptr,
                                                  cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                  cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const SvmRegion region = svm_region(command, svm_ptr, 1);
    unmap(command, region.buffer.get(), svm_ptr, CL_COMMAND_SVM_UNMAP);
  });
}

// Every region is checked; there is nothing to move (the memory is on its one device, and its host
// side is brought up to date by mappings).
CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMigrateMem(cl_command_queue command_queue, cl_uint num_svm_pointers,
                                                       const void** svm_pointers, const size_t* sizes,
                                                       cl_mem_migration_flags flags, cl_uint num_events_in_wait_list,
                                                       const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    if (num_svm_pointers == 0 || !svm_pointers ||
        (flags & ~cl_mem_migration_flags{CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED}))
      throw ClError{CL_INVALID_VALUE};
    for (cl_uint i = 0; i < num_svm_pointers; ++i) {
      const size_t size = sizes ? sizes[i] : 0;
      svm_region(command, svm_pointers[i], std::max<size_t>(size, 1));
    }
    enqueue_marker(command, CL_COMMAND_SVM_MIGRATE_MEM, false);
  });
}
