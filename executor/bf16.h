// bf16 and fp16 on the host: the one place CPU code converts between them and float.
//
// Values are kept as their raw bits (uint16_t), the layout the device, safetensors and PyTorch
// share. float -> bf16 rounds to nearest, ties to even, as PyTorch and CUDA's __float2bfloat16
// do, so host-generated weights and references round exactly like the device.
#pragma once

#include <bit>
#include <cstdint>

namespace megacut::executor {

// float -> bf16 bits, round to nearest even. NaN stays NaN (quiet, sign kept); values past the
// largest bf16 round to infinity.
constexpr uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// bf16 bits -> float: exact.
constexpr float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// The float nearest to `value` that bf16 can hold: what a device round trip gives.
constexpr float round_to_bf16(float value) { return bf16_to_float(float_to_bf16(value)); }

// IEEE fp16 bits -> float: exact (every fp16 value, subnormals included, is a float).
constexpr float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // subnormal or zero
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace megacut::executor
