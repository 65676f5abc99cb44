#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <CL/cl_hivecl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double example_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void example_check(const example_env* env, cl_int status, const char* what) {
  if (status == CL_SUCCESS) return;
  fprintf(stderr, "%s: %s failed (%d)\n", env->program, what, status);
  exit(1);
}

void* example_alloc(size_t bytes) {
  void* memory = malloc(bytes ? bytes : 1);
  if (!memory) {
    fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return memory;
}

float example_random(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void usage(const char* program, const example_option* options, size_t option_count, int status) {
  fprintf(status ? stderr : stdout, "usage: %s [--platform NAME] [--device INDEX]", program);
  for (size_t i = 0; i < option_count; ++i) fprintf(status ? stderr : stdout, " [%s N]", options[i].name);
  fprintf(status ? stderr : stdout,
          "\n  --platform NAME  platform whose name starts with NAME (default: the first)\n"
          "  --device INDEX   device of that platform (default 0)\n");
  for (size_t i = 0; i < option_count; ++i)
    fprintf(status ? stderr : stdout, "  %-16s %s (default %ld)\n", options[i].name, options[i].help, *options[i].value);
  exit(status);
}

static long parse_number(const char* program, const char* option, const char* text) {
  char* end = NULL;
  const long value = strtol(text, &end, 0);
  if (*text == '\0' || *end != '\0' || value < 0) {
    fprintf(stderr, "%s: %s needs a non-negative integer, not '%s'\n", program, option, text);
    exit(2);
  }
  return value;
}

static cl_platform_id pick_platform(const char* program, const char* name) {
  cl_uint count = 0;
  if (clGetPlatformIDs(0, NULL, &count) != CL_SUCCESS || count == 0) {
    fprintf(stderr, "%s: no OpenCL platform\n", program);
    exit(1);
  }
  cl_platform_id* platforms = example_alloc(count * sizeof *platforms);
  clGetPlatformIDs(count, platforms, NULL);
  cl_platform_id chosen = name ? NULL : platforms[0];
  for (cl_uint i = 0; name && i < count && !chosen; ++i) {
    char platform_name[256] = "";
    clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    if (strncmp(platform_name, name, strlen(name)) == 0) chosen = platforms[i];
  }
  free(platforms);
  if (!chosen) {
    fprintf(stderr, "%s: no platform named %s\n", program, name);
    exit(1);
  }
  return chosen;
}

cl_uint example_device_count(const example_env* env, cl_platform_id platform) {
  cl_uint count = 0;
  example_check(env, clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &count), "clGetDeviceIDs");
  return count;
}

cl_device_id example_device(const example_env* env, cl_platform_id platform, long index) {
  const cl_uint count = example_device_count(env, platform);
  if (index >= (long)count) {
    fprintf(stderr, "%s: the platform has %u device(s), no device %ld\n", env->program, count, index);
    exit(1);
  }
  cl_device_id* devices = example_alloc(count * sizeof *devices);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices, NULL);
  cl_device_id device = devices[index];
  free(devices);
  return device;
}

static void print_names(cl_platform_id platform, cl_device_id device) {
  char text[256] = "";
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof text, text, NULL);
  printf("platform: %s\n", text);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof text, text, NULL);
  printf("device: %s\n", text);
  if (clGetDeviceInfo(device, CL_DEVICE_NODE_NAME_HIVECL, sizeof text, text, NULL) == CL_SUCCESS)
    printf("node: %s\n", text);
}

cl_platform_id example_parse(example_env* env, int argc, char** argv, const example_option* options,
                             size_t option_count, long* device_index) {
  const char* slash = strrchr(argv[0], '/');
  memset(env, 0, sizeof *env);
  env->program = slash ? slash + 1 : argv[0];
  const char* platform_name = NULL;
  *device_index = 0;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--help") == 0) usage(env->program, options, option_count, 0);
    if (i + 1 >= argc) usage(env->program, options, option_count, 2);
    if (strcmp(argv[i], "--platform") == 0) {
      platform_name = argv[i + 1];
      continue;
    }
    long* target = strcmp(argv[i], "--device") == 0 ? device_index : NULL;
    for (size_t o = 0; o < option_count && !target; ++o)
      if (strcmp(argv[i], options[o].name) == 0) target = options[o].value;
    if (!target) usage(env->program, options, option_count, 2);
    *target = parse_number(env->program, argv[i], argv[i + 1]);
  }
  return pick_platform(env->program, platform_name);
}

void example_open_device(example_env* env, cl_platform_id platform, cl_device_id device) {
  env->device = device;
  print_names(platform, env->device);
  cl_int status = CL_SUCCESS;
  env->context = clCreateContext(NULL, 1, &env->device, NULL, NULL, &status);
  example_check(env, status, "clCreateContext");
  const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  env->queue = clCreateCommandQueueWithProperties(env->context, env->device, properties, &status);
  example_check(env, status, "clCreateCommandQueueWithProperties");
}

void example_open(example_env* env, int argc, char** argv, const example_option* options, size_t option_count) {
  long device_index = 0;
  cl_platform_id platform = example_parse(env, argc, argv, options, option_count, &device_index);
  example_open_device(env, platform, example_device(env, platform, device_index));
}

cl_kernel example_kernel(const example_env* env, const char* source, const char* build_options, const char* name) {
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(env->context, 1, &source, NULL, &status);
  example_check(env, status, "clCreateProgramWithSource");
  status = clBuildProgram(program, 1, &env->device, build_options, NULL, NULL);
  if (status != CL_SUCCESS) {
    char log[8192] = "";
    clGetProgramBuildInfo(program, env->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    fprintf(stderr, "%s: build log:\n%s\n", env->program, log);
  }
  example_check(env, status, "clBuildProgram");
  cl_kernel kernel = clCreateKernel(program, name, &status);
  example_check(env, status, "clCreateKernel");
  clReleaseProgram(program); /* the kernel keeps it */
  return kernel;
}

cl_mem example_buffer(const example_env* env, cl_mem_flags flags, size_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(env->context, flags, bytes, NULL, &status);
  example_check(env, status, "clCreateBuffer");
  return buffer;
}

void example_write(example_env* env, cl_mem buffer, size_t bytes, const void* host) {
  const double start = example_now_ms();
  example_check(env, clEnqueueWriteBuffer(env->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL),
                "clEnqueueWriteBuffer");
  env->transfer_ms += example_now_ms() - start;
}

void example_read(example_env* env, cl_mem buffer, size_t bytes, void* host) {
  const double start = example_now_ms();
  example_check(env, clEnqueueReadBuffer(env->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL),
                "clEnqueueReadBuffer");
  env->transfer_ms += example_now_ms() - start;
}

/* A blocking write may return once its data is copied, before it reaches the device (HiveCL's
 * does, through a proxy): what is still queued ends here and counts as transfer time, so the
 * kernel phase times the kernels alone, natively as through HiveCL. */
void example_kernels_begin(example_env* env) {
  const double start = example_now_ms();
  example_check(env, clFinish(env->queue), "clFinish");
  env->kernels_started = example_now_ms();
  env->transfer_ms += env->kernels_started - start;
}

void example_launch(example_env* env, cl_kernel kernel, cl_uint dimensions, const size_t* global, const size_t* local) {
  if (env->launched_count == env->launched_capacity) {
    env->launched_capacity = env->launched_capacity ? 2 * env->launched_capacity : 64;
    cl_event* grown = example_alloc(env->launched_capacity * sizeof *grown);
    if (env->launched_count) memcpy(grown, env->launched, env->launched_count * sizeof *grown);
    free(env->launched);
    env->launched = grown;
  }
  example_check(env,
                clEnqueueNDRangeKernel(env->queue, kernel, dimensions, NULL, global, local, 0, NULL,
                                       &env->launched[env->launched_count]),
                "clEnqueueNDRangeKernel");
  ++env->launched_count;
}

void example_warm_up(example_env* env, cl_kernel kernel, cl_uint dimensions, const size_t* global,
                     const size_t* local) {
  example_check(env, clEnqueueNDRangeKernel(env->queue, kernel, dimensions, NULL, global, local, 0, NULL, NULL),
                "clEnqueueNDRangeKernel");
  example_check(env, clFinish(env->queue), "clFinish");
}

void example_kernels_end(example_env* env) {
  example_check(env, clFinish(env->queue), "clFinish");
  env->kernel_ms += example_now_ms() - env->kernels_started;
  for (size_t i = 0; i < env->launched_count; ++i) {
    cl_ulong start = 0, end = 0;
    example_check(env,
                  clGetEventProfilingInfo(env->launched[i], CL_PROFILING_COMMAND_START, sizeof start, &start, NULL),
                  "clGetEventProfilingInfo");
    example_check(env, clGetEventProfilingInfo(env->launched[i], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL),
                  "clGetEventProfilingInfo");
    env->profiled_ms += (double)(end - start) / 1e6;
    clReleaseEvent(env->launched[i]);
  }
  env->launched_count = 0;
}

int example_has_fp64(const example_env* env) {
  cl_device_fp_config config = 0;
  clGetDeviceInfo(env->device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof config, &config, NULL);
  return config != 0;
}

void example_close(example_env* env) {
  free(env->launched);
  clReleaseCommandQueue(env->queue);
  clReleaseContext(env->context);
}

int example_finish(example_env* env, int correct, const char* result) {
  printf("time: transfer %.3f ms, kernel %.3f ms (profiled %.3f ms)\n", env->transfer_ms, env->kernel_ms,
         env->profiled_ms);
  printf("result: %s%s\n", correct ? "" : "WRONG, ", result);
  example_close(env);
  return correct ? 0 : 1;
}
