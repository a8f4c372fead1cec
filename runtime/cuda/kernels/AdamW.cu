// adamw_update: one AdamW step, elementwise, with the arithmetic of
// runtime/kernels/AdamW.cpp (scalar factors in double, the update in T).
// lr and step are device scalars (f32[] operands), read by every thread.
// A step below 1 (the CPU kernel's error) makes every output NaN.
// 1-D blocks of any size, any grid (grid-stride). Outputs may alias inputs.

template <typename T>
__device__ void strata_adamw_impl(const T *p, const T *g, const T *m,
                                  const T *v, const T *lrPtr, const T *stepPtr,
                                  T *pOut, T *mOut, T *vOut, long long n,
                                  double beta1, double beta2, double epsD,
                                  double weightDecay) {
  double lr = (double)*lrPtr;
  long long t = llround((double)*stepPtr);
  const T decay = (T)(1.0 - lr * weightDecay);
  const T b1 = (T)beta1, b2 = (T)beta2;
  const T c1 = (T)(1.0 - beta1), c2 = (T)(1.0 - beta2);
  const T stepSize = (T)(lr / (1.0 - pow(beta1, (double)t)));
  const T invBc2Sqrt = (T)(1.0 / sqrt(1.0 - pow(beta2, (double)t)));
  const T eps = (T)epsD;
  const T nan = strata_inf<T>() - strata_inf<T>();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    T gi = g[i];
    T mi = b1 * m[i] + c1 * gi;
    T vi = b2 * v[i] + c2 * gi * gi;
    T pi = p[i] * decay - stepSize * mi / (strata_sqrt(vi) * invBc2Sqrt + eps);
    bool bad = t < 1;
    mOut[i] = bad ? nan : mi;
    vOut[i] = bad ? nan : vi;
    pOut[i] = bad ? nan : pi;
  }
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
