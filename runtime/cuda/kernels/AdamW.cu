// AdamW, with the arithmetic of runtime/kernels/AdamW.cpp (scalar factors in
// double, the update in T). lr and step are device scalars (f32[] operands),
// read by every thread. A step below 1 (the CPU kernel's error) makes every
// output NaN. Outputs may alias inputs.
//  - adamw_update: one tensor; 1-D blocks of any size, any grid (grid-stride).
//  - adamw_multi: every tensor of a batch in one launch (runtime/cuda/
//    AdamWBatch.h). Tensors are described by a table in device memory
//    (kernel parameter space holds 4 KiB, too few for a model's pointers),
//    and split into chunks that each belong to one tensor; a block runs
//    chunks (grid-stride over the chunk table). Each tensor may carry the
//    gradient's factor (the clip coefficient, a device scalar): the
//    product g * factor is rounded once, as the separate mul it replaces.

// The per-tensor factors of one step, from lr, step and the hyperparameters.
template <typename T> struct StrataAdamwStep {
  T decay, b1, b2, c1, c2, stepSize, invBc2Sqrt, eps, nan;
  bool bad;
};

template <typename T>
__device__ StrataAdamwStep<T> strata_adamw_step(const T *lrPtr,
                                                const T *stepPtr, double beta1,
                                                double beta2, double epsD,
                                                double weightDecay) {
  double lr = (double)*lrPtr;
  long long t = llround((double)*stepPtr);
  StrataAdamwStep<T> s;
  s.decay = (T)(1.0 - lr * weightDecay);
  s.b1 = (T)beta1;
  s.b2 = (T)beta2;
  s.c1 = (T)(1.0 - beta1);
  s.c2 = (T)(1.0 - beta2);
  s.stepSize = (T)(lr / (1.0 - pow(beta1, (double)t)));
  s.invBc2Sqrt = (T)(1.0 / sqrt(1.0 - pow(beta2, (double)t)));
  s.eps = (T)epsD;
  s.nan = strata_inf<T>() - strata_inf<T>();
  s.bad = t < 1;
  return s;
}

template <typename T>
__device__ void strata_adamw_element(const StrataAdamwStep<T> &s, T gi,
                                     const T *p, const T *m, const T *v,
                                     T *pOut, T *mOut, T *vOut, long long i) {
  T mi = s.b1 * m[i] + s.c1 * gi;
  T vi = s.b2 * v[i] + s.c2 * gi * gi;
  T pi = p[i] * s.decay - s.stepSize * mi / (strata_sqrt(vi) * s.invBc2Sqrt +
                                             s.eps);
  mOut[i] = s.bad ? s.nan : mi;
  vOut[i] = s.bad ? s.nan : vi;
  pOut[i] = s.bad ? s.nan : pi;
}

template <typename T>
__device__ void strata_adamw_impl(const T *p, const T *g, const T *m,
                                  const T *v, const T *lrPtr, const T *stepPtr,
                                  T *pOut, T *mOut, T *vOut, long long n,
                                  double beta1, double beta2, double epsD,
                                  double weightDecay) {
  StrataAdamwStep<T> s =
      strata_adamw_step(lrPtr, stepPtr, beta1, beta2, epsD, weightDecay);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    strata_adamw_element(s, g[i], p, m, v, pOut, mOut, vOut, i);
}

extern "C" __global__ void
strata_adamw_f32(const float *p, const float *g, const float *m, const float *v,
                 const float *lr, const float *step, float *pOut, float *mOut,
                 float *vOut, long long n, double beta1, double beta2,
                 double eps, double weightDecay) {
  strata_adamw_impl(p, g, m, v, lr, step, pOut, mOut, vOut, n, beta1, beta2,
                    eps, weightDecay);
}
extern "C" __global__ void
strata_adamw_f64(const double *p, const double *g, const double *m,
                 const double *v, const double *lr, const double *step,
                 double *pOut, double *mOut, double *vOut, long long n,
                 double beta1, double beta2, double eps, double weightDecay) {
  strata_adamw_impl(p, g, m, v, lr, step, pOut, mOut, vOut, n, beta1, beta2,
                    eps, weightDecay);
}

// One tensor of a batch; the layout of cuda::AdamWTensor (AdamWBatch.h).
struct StrataAdamwTensor {
  const void *p, *g, *m, *v;
  void *pOut, *mOut, *vOut;
  const void *factor; // null: the gradient as it is
  long long n;
  double beta1, beta2, eps, weightDecay;
};
// One chunk: elements [begin, begin + chunk) of tensor `tensor` (fewer at
// its end); the layout of cuda::AdamWChunk.
struct StrataAdamwChunk {
  long long tensor, begin;
};

template <typename T>
__device__ void strata_adamw_multi_impl(const StrataAdamwTensor *tensors,
                                        const StrataAdamwChunk *chunks,
                                        long long numChunks, long long chunk,
                                        const T *lr, const T *step) {
  for (long long c = blockIdx.x; c < numChunks; c += gridDim.x) {
    const StrataAdamwTensor &x = tensors[chunks[c].tensor];
    StrataAdamwStep<T> s = strata_adamw_step(lr, step, x.beta1, x.beta2, x.eps,
                                             x.weightDecay);
    const T *g = (const T *)x.g, *factor = (const T *)x.factor;
    long long end = chunks[c].begin + chunk < x.n ? chunks[c].begin + chunk
                                                  : x.n;
    for (long long i = chunks[c].begin + threadIdx.x; i < end;
         i += blockDim.x)
      strata_adamw_element(s, factor ? g[i] * *factor : g[i], (const T *)x.p,
                           (const T *)x.m, (const T *)x.v, (T *)x.pOut,
                           (T *)x.mOut, (T *)x.vOut, i);
  }
}

extern "C" __global__ void
strata_adamw_multi_f32(const StrataAdamwTensor *tensors,
                       const StrataAdamwChunk *chunks, long long numChunks,
                       long long chunk, const float *lr, const float *step) {
  strata_adamw_multi_impl(tensors, chunks, numChunks, chunk, lr, step);
}
extern "C" __global__ void
strata_adamw_multi_f64(const StrataAdamwTensor *tensors,
                       const StrataAdamwChunk *chunks, long long numChunks,
                       long long chunk, const double *lr, const double *step) {
  strata_adamw_multi_impl(tensors, chunks, numChunks, chunk, lr, step);
}
