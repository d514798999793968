/* The FMA peak probe: independent chains of vector FMAs, to time the core's peak fp32 rate. */

/* 12 independent chains of VW-wide FMAs (enough to cover the FMA latency times the FMA ports of
 * every x86 core we know), iters rounds; returns the flops done (the caller times it). */
double NAME(fma_chains)(long iters) {
  vf x0 = V_SET1(1.0f), x1 = V_SET1(1.1f), x2 = V_SET1(1.2f), x3 = V_SET1(1.3f), x4 = V_SET1(1.4f),
     x5 = V_SET1(1.5f), x6 = V_SET1(1.6f), x7 = V_SET1(1.7f), x8 = V_SET1(1.8f), x9 = V_SET1(1.9f),
     x10 = V_SET1(2.0f), x11 = V_SET1(2.1f);
  const vf mul = V_SET1(0.999999f);
  const vf add = V_SET1(1e-7f);
  for (long it = 0; it < iters; it++) {
    x0 = V_FMA(x0, mul, add);
    x1 = V_FMA(x1, mul, add);
    x2 = V_FMA(x2, mul, add);
    x3 = V_FMA(x3, mul, add);
    x4 = V_FMA(x4, mul, add);
    x5 = V_FMA(x5, mul, add);
    x6 = V_FMA(x6, mul, add);
    x7 = V_FMA(x7, mul, add);
    x8 = V_FMA(x8, mul, add);
    x9 = V_FMA(x9, mul, add);
    x10 = V_FMA(x10, mul, add);
    x11 = V_FMA(x11, mul, add);
    __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5));
    __asm__ volatile("" : "+x"(x6), "+x"(x7), "+x"(x8), "+x"(x9), "+x"(x10), "+x"(x11));
  }
  float sink[VW];
  V_STORE(sink, V_ADD(V_ADD(V_ADD(x0, x1), V_ADD(x2, x3)), V_ADD(V_ADD(V_ADD(x4, x5), V_ADD(x6, x7)),
                                                                  V_ADD(V_ADD(x8, x9), V_ADD(x10, x11)))));
  volatile float keep = sink[0];
  (void) keep;
  return 2.0 * VW * 12.0 * (double) iters;
}
