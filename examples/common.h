/* What every example shares: its command line (--platform NAME --device N and its own
 * integer options), opening the chosen device with a profiling queue, building a kernel,
 * timing, and the lines every example prints:
 *
 *   platform: ...   device: ...   node: ... (HiveCL devices only)
 *   time: transfer T ms, kernel K ms (profiled P ms)
 *   result: ...
 *
 * "transfer" and "kernel" are host time around the blocking transfers and around the kernel
 * launches up to their completion (what an application waits for, HiveCL's cost included);
 * "profiled" is the kernels' own device time from event profiling.
 */
#ifndef HIVECL_EXAMPLES_COMMON_H
#define HIVECL_EXAMPLES_COMMON_H

#include <CL/cl.h>
#include <stddef.h>

/* An integer option of one example: "--size" and the variable it sets. */
typedef struct {
  const char* name;
  long* value;
  const char* help;
} example_option;

typedef struct {
  const char* program; /* the example's name, for messages */
  cl_device_id device;
  cl_context context;
  cl_command_queue queue; /* in order, with profiling */
  double transfer_ms, kernel_ms, profiled_ms;
  double kernels_started; /* host clock at example_kernels_begin */
  cl_event* launched;     /* kernels launched since then */
  size_t launched_count, launched_capacity;
} example_env;

/* Parses --platform, --device, --help and the example's options, opens the device and prints
 * the platform, device and node. Exits with a message on bad input or an OpenCL error. */
void example_open(example_env* env, int argc, char** argv, const example_option* options, size_t option_count);

/* The two halves of example_open, for programs that use several devices: the command line
 * (its --device goes to *device_index; the env gets the program's name), then one device
 * opened into `env` (a context and a profiling queue of its own; its names printed). */
cl_platform_id example_parse(example_env* env, int argc, char** argv, const example_option* options,
                             size_t option_count, long* device_index);
void example_open_device(example_env* env, cl_platform_id platform, cl_device_id device);
cl_uint example_device_count(const example_env* env, cl_platform_id platform);
/* Device `index` of the platform (all types); exits with a message when there is none. */
cl_device_id example_device(const example_env* env, cl_platform_id platform, long index);

/* Exits with status 1 and a message when `status` is not CL_SUCCESS. */
void example_check(const example_env* env, cl_int status, const char* what);

/* Builds `source` with `build_options` and returns its kernel `name`; shows the build log
 * on failure. */
cl_kernel example_kernel(const example_env* env, const char* source, const char* build_options, const char* name);

cl_mem example_buffer(const example_env* env, cl_mem_flags flags, size_t bytes);

/* Blocking transfers, counted as transfer time. */
void example_write(example_env* env, cl_mem buffer, size_t bytes, const void* host);
void example_read(example_env* env, cl_mem buffer, size_t bytes, void* host);

/* Launches a kernel once and waits, untimed: runtimes compile kernels for their work-group
 * size at the first launch (PoCL does), which is not what the examples measure. */
void example_warm_up(example_env* env, cl_kernel kernel, cl_uint dimensions, const size_t* global,
                     const size_t* local);
/* Launches a kernel without waiting (its profiled time is added once it completes). */
void example_launch(example_env* env, cl_kernel kernel, cl_uint dimensions, const size_t* global, const size_t* local);
/* Starts and ends a kernel phase: host time from here to the completion of every kernel launched.
 * It starts once the queue is empty (the wait counts as transfer time). */
void example_kernels_begin(example_env* env);
void example_kernels_end(example_env* env);

/* True when the device computes in double precision. */
int example_has_fp64(const example_env* env);

void* example_alloc(size_t bytes);
/* The host clock (monotonic), in milliseconds. */
double example_now_ms(void);
/* Deterministic pseudo-random values in [-1, 1). */
float example_random(unsigned* state);

/* Prints the time line and the result line ("result: " and `result`, after "WRONG, " when not
 * `correct`), releases the queue and context, and returns the exit status: 0 when `correct`. */
int example_finish(example_env* env, int correct, const char* result);
/* Releases what example_open_device made (example_finish does it too). */
void example_close(example_env* env);

#endif
