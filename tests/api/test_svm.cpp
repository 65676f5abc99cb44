// Shared virtual memory (coarse-grained buffers), natively and through HiveCL: allocations,
// mappings, kernels given SVM pointers and following pointers stored in SVM, copies, fills,
// migrations and frees, and the checks HiveCL makes on addresses it is given.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

// Under AddressSanitizer the application's heap and a proxy's lie in the same fixed address
// range (ASan's allocator), so no allocation of a proxy can be seen at its address here: the
// sanitized build skips these tests through a proxy (they run in-process).
bool svm_testable() {
#if defined(__SANITIZE_ADDRESS__)
  static const bool testable = hivecl_in_process();
  return testable;
#else
  return true;
#endif
}

// Devices without coarse-grained SVM skip these tests (on both sides alike).
bool has_svm(Probe& probe) {
  if (!svm_testable()) {
    WARN("SVM through a proxy is not tested under AddressSanitizer");
    return false;
  }
  cl_device_svm_capabilities capabilities = 0;
  const cl_int status = clGetDeviceInfo(probe.device(), CL_DEVICE_SVM_CAPABILITIES, sizeof capabilities,
                                        &capabilities, nullptr);
  probe.value("coarse-grained SVM", status == CL_SUCCESS && (capabilities & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER));
  return status == CL_SUCCESS && (capabilities & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
}

// An SVM allocation freed when the test leaves its scope.
class Svm {
 public:
  Svm(cl_context context, size_t size, cl_svm_mem_flags flags = CL_MEM_READ_WRITE)
      : context_(context), pointer_(clSVMAlloc(context, flags, size, 0)) {
    REQUIRE(pointer_ != nullptr);
  }
  Svm(const Svm&) = delete;
  Svm& operator=(const Svm&) = delete;
  ~Svm() { clSVMFree(context_, pointer_); }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(pointer_);
  }

 private:
  cl_context context_;
  void* pointer_;
};

cl_command_type command_type(cl_event event) {
  cl_command_type type = 0;
  REQUIRE(clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS);
  return type;
}

const char* const svm_source = R"(
struct node {
  global struct node* next;
  int value;
};

kernel void add_one(global int* data) { data[get_global_id(0)] += 1; }

// Follows the list from `head`, whose nodes live in another allocation.
kernel void sum_list(global struct node* head, global int* sum) {
  int total = 0;
  for (global struct node* node = head; node; node = node->next) total += node->value;
  *sum = total;
}
)";

Kernel make_kernel(cl_program program, const char* name) {
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, name, &status));
  REQUIRE(status == CL_SUCCESS);
  return kernel;
}

}  // namespace

DIFFERENTIAL_TEST(svm_allocations, "clSVMAlloc refuses what the specification refuses; clSVMFree takes NULL",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  cl_ulong max_alloc = 0;
  REQUIRE(clGetDeviceInfo(probe.device(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr) ==
          CL_SUCCESS);
  const auto allocated = [&](const char* what, cl_svm_mem_flags flags, size_t size, cl_uint alignment) {
    void* pointer = clSVMAlloc(setup.context, flags, size, alignment);
    probe.value(what, pointer != nullptr);
    if (pointer) {
      CHECK(reinterpret_cast<uintptr_t>(pointer) % std::max<cl_uint>(alignment, 1) == 0);
      clSVMFree(setup.context, pointer);
    }
  };
  allocated("read-write, 1 KiB", CL_MEM_READ_WRITE, 1024, 0);
  allocated("default flags", 0, 4096, 0);
  allocated("read-only, aligned to 4 KiB", CL_MEM_READ_ONLY, 100, 4096);
  allocated("size 0", CL_MEM_READ_WRITE, 0, 0);
  allocated("alignment 3", CL_MEM_READ_WRITE, 64, 3);
  allocated("two access flags", CL_MEM_READ_WRITE | CL_MEM_READ_ONLY, 64, 0);
  allocated("past the largest allocation", CL_MEM_READ_WRITE, static_cast<size_t>(max_alloc) + 1, 0);
  clSVMFree(setup.context, nullptr);
  // Small allocations one after the other: some share a page (through a proxy, one page of the
  // application's view serves both).
  std::vector<void*> small;
  for (int i = 0; i < 16; ++i) {
    small.push_back(clSVMAlloc(setup.context, CL_MEM_READ_WRITE, 24, 0));
    REQUIRE(small.back() != nullptr);
  }
  for (size_t i = 0; i < small.size(); i += 2) clSVMFree(setup.context, small[i]);
  for (size_t i = 1; i < small.size(); i += 2) clSVMFree(setup.context, small[i]);
}

DIFFERENTIAL_TEST(svm_map_and_kernel, "Mapped SVM is written by the host and by a kernel given an SVM pointer",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  constexpr size_t count = 4096, skipped = 16;
  Svm data(setup.context, count * sizeof(int));
  int* values = data.get<int>();
  Event map_event;
  probe.status("map for writing", clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, values,
                                                  count * sizeof(int), 0, nullptr, map_event.out()));
  probe.value("map's command", command_type(map_event));
  std::iota(values, values + count, 0);
  Event unmap_event;
  probe.status("unmap", clEnqueueSVMUnmap(setup.queue, values, 0, nullptr, unmap_event.out()));
  probe.value("unmap's command", command_type(unmap_event));

  Program program = build_program(probe, setup.context, svm_source);
  Kernel add_one = make_kernel(program, "add_one");
  // An address inside the allocation: the kernel starts there.
  probe.status("SVM pointer argument", clSetKernelArgSVMPointer(add_one, 0, values + skipped));
  const size_t items = count - skipped;
  probe.status("launch", clEnqueueNDRangeKernel(setup.queue, add_one, 1, nullptr, &items, nullptr, 0, nullptr,
                                                nullptr));
  probe.status("map for reading", clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_READ, values, count * sizeof(int), 0,
                                                  nullptr, nullptr));
  std::vector<int> expected(count);
  std::iota(expected.begin(), expected.end(), 0);
  for (size_t i = skipped; i < count; ++i) expected[i] += 1;
  const bool right = std::equal(values, values + count, expected.begin());
  CHECK(right);
  probe.record("after the kernel", checksum(values, count * sizeof(int)));
  probe.status("unmap after reading", clEnqueueSVMUnmap(setup.queue, values, 0, nullptr, nullptr));
  probe.status("finish", clFinish(setup.queue));
}

DIFFERENTIAL_TEST(svm_pointers_in_memory, "A kernel follows pointers stored in SVM, named by clSetKernelExecInfo",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  struct Node {
    Node* next;
    cl_int value;
  };
  constexpr size_t nodes = 100;
  Svm list(setup.context, nodes * sizeof(Node));
  Svm head(setup.context, sizeof(Node));
  Svm sum(setup.context, sizeof(cl_int));
  Node* node = list.get<Node>();
  REQUIRE(clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_WRITE, node, nodes * sizeof(Node), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  REQUIRE(clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_WRITE, head.get(), sizeof(Node), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  // Linked backwards through the allocation, so that the order is the pointers' alone.
  for (size_t i = 0; i < nodes; ++i) node[i] = {i > 0 ? &node[i - 1] : nullptr, static_cast<cl_int>(i * 3 + 1)};
  *head.get<Node>() = {&node[nodes - 1], 1000};
  REQUIRE(clEnqueueSVMUnmap(setup.queue, node, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clEnqueueSVMUnmap(setup.queue, head.get(), 0, nullptr, nullptr) == CL_SUCCESS);

  Program program = build_program(probe, setup.context, svm_source);
  Kernel sum_list = make_kernel(program, "sum_list");
  void* reached[] = {node};
  probe.status("exec info: SVM pointers", clSetKernelExecInfo(sum_list, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof reached,
                                                              reached));
  probe.status("head argument", clSetKernelArgSVMPointer(sum_list, 0, head.get()));
  probe.status("sum argument", clSetKernelArgSVMPointer(sum_list, 1, sum.get()));
  const size_t one = 1;
  probe.status("launch", clEnqueueNDRangeKernel(setup.queue, sum_list, 1, nullptr, &one, nullptr, 0, nullptr,
                                                nullptr));
  cl_int total = 0;
  probe.status("copy the sum out", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, &total, sum.get(), sizeof total, 0,
                                                      nullptr, nullptr));
  probe.value("sum", total);
  CHECK(total == 1000 + static_cast<cl_int>(3 * nodes * (nodes - 1) / 2 + nodes));
  probe.status("exec info: none any more", clSetKernelExecInfo(sum_list, CL_KERNEL_EXEC_INFO_SVM_PTRS, 0, nullptr));
}

DIFFERENTIAL_TEST(svm_copies_and_fills, "clEnqueueSVMMemcpy and clEnqueueSVMMemFill in every direction",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  constexpr size_t size = 64 * 1024;
  Svm first(setup.context, size), second(setup.context, size);
  std::vector<unsigned char> host(size), back(size, 0);
  for (size_t i = 0; i < size; ++i) host[i] = static_cast<unsigned char>(i * 7 + (i >> 9));
  auto* a = first.get<unsigned char>();
  auto* b = second.get<unsigned char>();
  Event copy_event;
  probe.status("host to SVM", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, a, host.data(), size, 0, nullptr,
                                                 copy_event.out()));
  probe.value("copy's command", command_type(copy_event));
  probe.status("SVM to SVM", clEnqueueSVMMemcpy(setup.queue, CL_FALSE, b + 100, a, size - 100, 0, nullptr, nullptr));
  probe.status("within one allocation", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, b, b + size / 2, size / 4, 0,
                                                           nullptr, nullptr));
  const cl_uint pattern = 0xA5C3E1F7u;
  Event fill_event;
  probe.status("fill", clEnqueueSVMMemFill(setup.queue, b + size - 4096, &pattern, sizeof pattern, 1024, 0, nullptr,
                                           fill_event.out()));
  probe.value("fill's command", command_type(fill_event));
  probe.status("SVM to host", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, back.data(), b, size, 0, nullptr, nullptr));
  std::vector<unsigned char> expected(size);
  std::copy(host.begin(), host.end() - 100, expected.begin() + 100);
  std::copy(expected.begin() + size / 2, expected.begin() + size / 2 + size / 4, expected.begin());
  for (size_t i = 0; i < 1024; ++i) expected[size - 4096 + i] = reinterpret_cast<const unsigned char*>(&pattern)[i % 4];
  const bool right = back == expected;
  CHECK(right);
  probe.record("copied and filled", checksum(back.data(), size));
  std::vector<unsigned char> other(size, 1);
  probe.status("host to host", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, other.data(), back.data(), size, 0, nullptr,
                                                  nullptr));
  CHECK(other == back);
  probe.status("overlapping", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, a + 8, a, 64, 0, nullptr, nullptr));
  probe.status("NULL destination", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, nullptr, a, 64, 0, nullptr, nullptr));
  probe.status("fill pattern of 3", clEnqueueSVMMemFill(setup.queue, a, &pattern, 3, 12, 0, nullptr, nullptr));
  probe.status("fill size not a multiple", clEnqueueSVMMemFill(setup.queue, a, &pattern, 4, 6, 0, nullptr, nullptr));
  probe.status("finish", clFinish(setup.queue));
}

DIFFERENTIAL_TEST(svm_free_and_migrate, "clEnqueueSVMFree calls its function or frees; clEnqueueSVMMigrateMem",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  void* pointers[] = {clSVMAlloc(setup.context, CL_MEM_READ_WRITE, 4096, 0),
                      clSVMAlloc(setup.context, CL_MEM_READ_WRITE, 256, 0)};
  REQUIRE(pointers[0] != nullptr);
  REQUIRE(pointers[1] != nullptr);
  const void* migrated[] = {pointers[0], static_cast<char*>(pointers[1]) + 16};
  const size_t sizes[] = {0, 64};
  Event migrate_event;
  probe.status("migrate", clEnqueueSVMMigrateMem(setup.queue, 2, migrated, sizes, 0, 0, nullptr,
                                                 migrate_event.out()));
  probe.value("migration's command", command_type(migrate_event));
  probe.status("migrate nothing", clEnqueueSVMMigrateMem(setup.queue, 0, migrated, sizes, 0, 0, nullptr, nullptr));

  struct Freed {
    std::atomic<int> calls{0};
    cl_uint count = 0;
    void* first = nullptr;
    void* second = nullptr;
    cl_context context = nullptr;
  } freed;
  freed.context = setup.context;
  const auto free_function = [](cl_command_queue, cl_uint count, void* svm_pointers[], void* user_data) {
    auto* record = static_cast<Freed*>(user_data);
    record->count = count;
    record->first = svm_pointers[0];
    record->second = svm_pointers[1];
    for (cl_uint i = 0; i < count; ++i) clSVMFree(record->context, svm_pointers[i]);
    record->calls.fetch_add(1);
  };
  Event free_event;
  probe.status("enqueue a free", clEnqueueSVMFree(setup.queue, 2, pointers, free_function, &freed, 0, nullptr,
                                                  free_event.out()));
  probe.value("free's command", command_type(free_event));
  probe.status("finish", clFinish(setup.queue));
  // The function may run after clFinish returns (HiveCL calls it from its callback thread).
  for (int i = 0; i < 1000 && freed.calls.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  probe.value("free function calls", freed.calls.load());
  probe.value("pointers it got", freed.count);
  CHECK(freed.first == pointers[0]);
  CHECK(freed.second == pointers[1]);

  void* plain = clSVMAlloc(setup.context, CL_MEM_READ_WRITE, 1024, 0);
  REQUIRE(plain != nullptr);
  probe.status("enqueue a free without a function", clEnqueueSVMFree(setup.queue, 1, &plain, nullptr, nullptr, 0,
                                                                     nullptr, nullptr));
  probe.status("count without pointers", clEnqueueSVMFree(setup.queue, 1, nullptr, nullptr, nullptr, 0, nullptr,
                                                          nullptr));
  probe.status("finish again", clFinish(setup.queue));
}

DIFFERENTIAL_TEST(svm_buffers, "A buffer made on SVM memory (CL_MEM_USE_HOST_PTR) uses that memory",
                  "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  constexpr size_t count = 1024, start = 256;
  Svm data(setup.context, count * sizeof(int));
  int* values = data.get<int>();
  std::vector<int> initial(count);
  std::iota(initial.begin(), initial.end(), 5);
  REQUIRE(clEnqueueSVMMemcpy(setup.queue, CL_TRUE, values, initial.data(), count * sizeof(int), 0, nullptr,
                             nullptr) == CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  const size_t size = (count - start) * sizeof(int);
  Buffer over(clCreateBuffer(setup.context, CL_MEM_USE_HOST_PTR, size, values + start, &status));
  probe.status("buffer on SVM", status);
  cl_bool uses_svm = CL_FALSE;
  REQUIRE(clGetMemObjectInfo(over, CL_MEM_USES_SVM_POINTER, sizeof uses_svm, &uses_svm, nullptr) == CL_SUCCESS);
  // HiveCL answers as the specification says; PoCL 3.1 answers CL_FALSE.
  if (probe.hivecl()) CHECK(uses_svm == CL_TRUE);
  std::vector<int> plain_data(4);
  Buffer plain(clCreateBuffer(setup.context, CL_MEM_USE_HOST_PTR, sizeof(int) * 4, plain_data.data(), &status));
  REQUIRE(clGetMemObjectInfo(plain, CL_MEM_USES_SVM_POINTER, sizeof uses_svm, &uses_svm, nullptr) == CL_SUCCESS);
  probe.value("an ordinary buffer's CL_MEM_USES_SVM_POINTER", uses_svm);
  Buffer too_large(clCreateBuffer(setup.context, CL_MEM_USE_HOST_PTR, count * sizeof(int) + 4, values, &status));
  probe.status("buffer larger than its SVM allocation", status);

  // The buffer's contents are the allocation's; what a kernel writes through it is in the allocation.
  std::vector<int> through_buffer(count - start);
  probe.status("read the buffer", clEnqueueReadBuffer(setup.queue, over, CL_TRUE, 0, size, through_buffer.data(), 0,
                                                      nullptr, nullptr));
  CHECK(std::equal(through_buffer.begin(), through_buffer.end(), initial.begin() + start));
  Program program = build_program(probe, setup.context, svm_source);
  Kernel add_one = make_kernel(program, "add_one");
  REQUIRE(clSetKernelArg(add_one, 0, sizeof(cl_mem), over.out()) == CL_SUCCESS);
  const size_t items = count - start;
  probe.status("launch on the buffer", clEnqueueNDRangeKernel(setup.queue, add_one, 1, nullptr, &items, nullptr, 0,
                                                              nullptr, nullptr));
  std::vector<int> after(count);
  probe.status("copy the allocation out", clEnqueueSVMMemcpy(setup.queue, CL_TRUE, after.data(), values,
                                                             count * sizeof(int), 0, nullptr, nullptr));
  std::vector<int> expected = initial;
  for (size_t i = start; i < count; ++i) expected[i] += 1;
  CHECK(after == expected);
  probe.record("the allocation", checksum(after.data(), count * sizeof(int)));
  probe.status("finish", clFinish(setup.queue));
}

// What HiveCL refuses where a native runtime may take any address: it gives a device only
// addresses inside its allocations, and offers coarse-grained buffers alone.
HIVECL_TEST(svm_checked_addresses, "HiveCL checks every SVM address it is given", "[memory][svm]") {
  if (!has_svm(probe)) return;
  Setup setup = make_setup(probe);
  cl_device_svm_capabilities capabilities = 0;
  REQUIRE(clGetDeviceInfo(probe.device(), CL_DEVICE_SVM_CAPABILITIES, sizeof capabilities, &capabilities, nullptr) ==
          CL_SUCCESS);
  CHECK(capabilities == CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
  CHECK(clSVMAlloc(setup.context, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, 64, 0) == nullptr);
  Svm data(setup.context, 1024);
  int on_stack[4] = {};
  Program program = build_program(probe, setup.context, svm_source);
  Kernel add_one = make_kernel(program, "add_one");
  CHECK(clSetKernelArgSVMPointer(add_one, 0, on_stack) == CL_INVALID_ARG_VALUE);
  CHECK(clSetKernelArgSVMPointer(add_one, 0, data.get<char>() + 2048) == CL_INVALID_ARG_VALUE);
  CHECK(clSetKernelArgSVMPointer(add_one, 1, data.get()) == CL_INVALID_ARG_INDEX);
  CHECK(clSetKernelArgSVMPointer(add_one, 0, data.get<char>() + 1024) == CL_SUCCESS);  // its end
  void* not_svm[] = {on_stack};
  CHECK(clSetKernelExecInfo(add_one, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof not_svm, not_svm) == CL_INVALID_VALUE);
  CHECK(clSetKernelExecInfo(add_one, CL_KERNEL_EXEC_INFO_SVM_PTRS, 3, not_svm) == CL_INVALID_VALUE);
  const cl_bool fine_grain_system = CL_TRUE;
  CHECK(clSetKernelExecInfo(add_one, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof fine_grain_system,
                            &fine_grain_system) == CL_INVALID_OPERATION);
  CHECK(clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_READ, data.get(), 2048, 0, nullptr, nullptr) == CL_INVALID_VALUE);
  CHECK(clEnqueueSVMMap(setup.queue, CL_TRUE, CL_MAP_READ, on_stack, 16, 0, nullptr, nullptr) == CL_INVALID_VALUE);
  CHECK(clEnqueueSVMUnmap(setup.queue, data.get(), 0, nullptr, nullptr) == CL_INVALID_VALUE);  // not mapped
  CHECK(clEnqueueSVMMemcpy(setup.queue, CL_TRUE, data.get(), on_stack, 2048, 0, nullptr, nullptr) == CL_INVALID_VALUE);
  const cl_int pattern = 7;
  CHECK(clEnqueueSVMMemFill(setup.queue, data.get<char>() + 512, &pattern, sizeof pattern, 1024, 0, nullptr,
                            nullptr) == CL_INVALID_VALUE);
  // OpenCL 3.0 lets a free name no pointer (PoCL 3.1 refuses it, as OpenCL 2.0 said).
  CHECK(clEnqueueSVMFree(setup.queue, 0, nullptr, nullptr, nullptr, 0, nullptr, nullptr) == CL_SUCCESS);
  const void* migrated[] = {on_stack};
  CHECK(clEnqueueSVMMigrateMem(setup.queue, 1, migrated, nullptr, 0, 0, nullptr, nullptr) == CL_INVALID_VALUE);
  // A kernel whose SVM allocation was freed since its argument was set fails its launch.
  void* gone = clSVMAlloc(setup.context, CL_MEM_READ_WRITE, 64, 0);
  REQUIRE(gone != nullptr);
  REQUIRE(clSetKernelArgSVMPointer(add_one, 0, gone) == CL_SUCCESS);
  clSVMFree(setup.context, gone);
  const size_t one = 1;
  CHECK(clEnqueueNDRangeKernel(setup.queue, add_one, 1, nullptr, &one, nullptr, 0, nullptr, nullptr) ==
        CL_INVALID_KERNEL_ARGS);
  CHECK(clFinish(setup.queue) == CL_SUCCESS);
}
