/* half.c — float16 and bfloat16 conversions to and from float32 (round to nearest even). */
#include <string.h>

#include "op/op.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float fold__bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t fold__f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1); /* round to nearest, ties to even */
  return (uint16_t)(u >> 16);
}

float fold__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) /* inf / NaN */
    return u2f(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return u2f(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t fold__f32_to_f16(float f) {
  uint32_t u = f2u(f);
  uint32_t sign = (u >> 16) & 0x8000, abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00); /* NaN */
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (abs < 0x38800000u) {
    /* below the smallest normal (2^-14): subnormal or zero, in units of 2^-24 */
    float a = u2f(abs) * 16777216.0f; /* exact scaling by 2^24 */
    uint32_t q = (uint32_t)a;
    float rem = a - (float)q;
    if (rem > 0.5f || (rem == 0.5f && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  /* normal: drop 13 mantissa bits with round to nearest even */
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1);
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
