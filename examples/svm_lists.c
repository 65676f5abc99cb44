/* Linked lists in shared virtual memory (coarse-grained SVM buffers, OpenCL 2.0): the host builds
 * LISTS lists of NODES nodes with pointers between them, in an order the pointers alone give;
 * one work-item per list follows its pointers on the device and writes the list's sum. Through
 * HiveCL the pointers the host stored mean the same on the device, as natively.
 *
 *   svm_lists [--platform NAME] [--device INDEX] [--lists N] [--nodes M]
 *
 * The transfer time is the mapping and unmapping of the nodes (the host writes them) and of
 * the sums (the host reads them). A device without coarse-grained SVM exits with a message.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

typedef struct node {
  struct node* next;
  cl_int value;
} node;

static const char* kernel_source =
    "typedef struct node { global struct node* next; int value; } node;\n"
    "__kernel void sum_lists(global const node* heads, global int* sums) {\n"
    "  size_t list = get_global_id(0);\n"
    "  int total = 0;\n"
    "  for (global node* at = heads[list].next; at; at = at->next) total += at->value;\n"
    "  sums[list] = total;\n"
    "}\n";

static void* svm_alloc(example_env* env, size_t bytes) {
  void* memory = clSVMAlloc(env->context, CL_MEM_READ_WRITE, bytes, 0);
  if (!memory) example_check(env, CL_OUT_OF_RESOURCES, "clSVMAlloc");
  return memory;
}

/* Maps `bytes` of SVM at `memory` for the host, timed as a transfer. */
static void svm_map(example_env* env, void* memory, size_t bytes, cl_map_flags flags) {
  const double start = example_now_ms();
  example_check(env, clEnqueueSVMMap(env->queue, CL_TRUE, flags, memory, bytes, 0, NULL, NULL), "clEnqueueSVMMap");
  env->transfer_ms += example_now_ms() - start;
}

static void svm_unmap(example_env* env, void* memory) {
  const double start = example_now_ms();
  example_check(env, clEnqueueSVMUnmap(env->queue, memory, 0, NULL, NULL), "clEnqueueSVMUnmap");
  example_check(env, clFinish(env->queue), "clFinish");
  env->transfer_ms += example_now_ms() - start;
}

int main(int argc, char** argv) {
  long lists = 1024, nodes = 256;
  const example_option options[] = {{"--lists", &lists, "number of lists (work-items)"},
                                    {"--nodes", &nodes, "nodes of each list"}};
  example_env env;
  example_open(&env, argc, argv, options, 2);
  cl_device_svm_capabilities svm = 0;
  clGetDeviceInfo(env.device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
  if (!(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) return example_finish(&env, 0, "no coarse-grained SVM");
  const size_t count = (size_t)lists * (size_t)nodes;
  node* all = svm_alloc(&env, count * sizeof(node));
  node* heads = svm_alloc(&env, (size_t)lists * sizeof(node)); /* each list's head: its `next` */
  cl_int* sums = svm_alloc(&env, (size_t)lists * sizeof(cl_int));

  /* List l holds nodes l, l + lists, l + 2 lists, ...; each links to the one before it. */
  svm_map(&env, all, count * sizeof(node), CL_MAP_WRITE_INVALIDATE_REGION);
  svm_map(&env, heads, (size_t)lists * sizeof(node), CL_MAP_WRITE_INVALIDATE_REGION);
  unsigned state = 7;
  for (size_t i = 0; i < count; ++i) {
    all[i].next = i >= (size_t)lists ? &all[i - (size_t)lists] : NULL;
    all[i].value = (cl_int)(example_random(&state) * 1000.0f);
  }
  for (long l = 0; l < lists; ++l) heads[l] = (node){&all[count - (size_t)lists + (size_t)l], 0};
  svm_unmap(&env, all);
  svm_unmap(&env, heads);

  cl_kernel kernel = example_kernel(&env, kernel_source, NULL, "sum_lists");
  example_check(&env, clSetKernelArgSVMPointer(kernel, 0, heads), "clSetKernelArgSVMPointer");
  example_check(&env, clSetKernelArgSVMPointer(kernel, 1, sums), "clSetKernelArgSVMPointer");
  /* The nodes are reached through pointers in memory, not through an argument. */
  void* reached[] = {all};
  example_check(&env, clSetKernelExecInfo(kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof reached, reached),
                "clSetKernelExecInfo");
  const size_t global = (size_t)lists;
  example_warm_up(&env, kernel, 1, &global, NULL);
  example_kernels_begin(&env);
  example_launch(&env, kernel, 1, &global, NULL);
  example_kernels_end(&env);

  svm_map(&env, sums, (size_t)lists * sizeof(cl_int), CL_MAP_READ);
  svm_map(&env, all, count * sizeof(node), CL_MAP_READ);
  long wrong = 0;
  double checksum = 0;
  for (long l = 0; l < lists; ++l) {
    cl_int expected = 0;
    for (size_t i = (size_t)l; i < count; i += (size_t)lists) expected += all[i].value;
    if (sums[l] != expected) ++wrong;
    checksum += sums[l];
  }
  svm_unmap(&env, sums);
  svm_unmap(&env, all);
  char text[256];
  snprintf(text, sizeof text, "%ld lists of %ld nodes, %ld wrong, checksum %.0f", lists, nodes, wrong, checksum);

  clReleaseKernel(kernel);
  clSVMFree(env.context, all);
  clSVMFree(env.context, heads);
  clSVMFree(env.context, sums);
  return example_finish(&env, wrong == 0, text);
}
