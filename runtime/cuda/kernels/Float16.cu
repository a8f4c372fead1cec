// bf16 and fp16 storage with f32 math (runtime/cuda/Widen.h): whole
// buffers widened to f32 and rounded back, with codegen's conversions
// (codegen::cudaFloat16Helpers(), placed before the kernels: the CPU's bit
// for bit). Values are 16-bit patterns (unsigned short). 1-D blocks, any
// grid (grid-stride).

extern "C" __global__ void __launch_bounds__(256)
strata_widen_bf16(const unsigned short *x, float *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    y[i] = strata_bf16_to_float(x[i]);
}
extern "C" __global__ void __launch_bounds__(256)
strata_widen_f16(const unsigned short *x, float *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    y[i] = strata_half_to_float(x[i]);
}
extern "C" __global__ void __launch_bounds__(256)
strata_narrow_bf16(const float *x, unsigned short *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    y[i] = strata_float_to_bf16(x[i]);
}
extern "C" __global__ void __launch_bounds__(256)
strata_narrow_f16(const float *x, unsigned short *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    y[i] = strata_float_to_half(x[i]);
}
