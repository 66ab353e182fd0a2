#include "simulator/tile_region.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

#include "model/error.h"

namespace megacut::simulator {
namespace {

// Registers are allocated per warp in units of 256.
constexpr int64_t kRegisterUnit = 256;
constexpr int kWarp = 32;

struct Footprint {
  int64_t threads = 0;
  int64_t registers = 0;
  int64_t smem = 0;
};

Footprint footprint(const TileKernel& k, const TileDevice& device) {
  const int64_t warps = (k.threads + kWarp - 1) / kWarp;
  const int64_t per_warp =
      (int64_t{k.registers} * kWarp + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  return {warps * kWarp, warps * per_warp,
          k.smem_bytes + device.limits.reserved_smem_per_cta_bytes};
}

// What one SM holds now.
struct SmLoad {
  int64_t threads = 0;
  int64_t registers = 0;
  int64_t smem = 0;
  int ctas = 0;
};

// An idle SM takes any CTA: the kernel ran, so it fit.
bool fits(const SmLoad& load, const Footprint& f, const TileDevice& device) {
  if (load.ctas == 0) return true;
  return load.ctas + 1 <= device.limits.ctas && load.threads + f.threads <= device.limits.threads &&
         load.registers + f.registers <= device.registers_per_sm &&
         load.smem + f.smem <= device.limits.smem_bytes;
}

void add(SmLoad& load, const Footprint& f, int sign) {
  load.threads += sign * f.threads;
  load.registers += sign * f.registers;
  load.smem += sign * f.smem;
  load.ctas += sign;
}

// Each kernel's CTA and tile times.
struct KernelTimes {
  Footprint footprint;
  double cta_ns = 0;  // one CTA's time
  int64_t tiles_per_cta = 1;
  double tile_ns = 0;
};

KernelTimes kernel_times(const TileKernel& k, const TileDevice& device, const char* which) {
  if (k.ctas < 1 || k.threads < 1 || k.tiles() < 1 || !(k.duration_ns >= 0)) {
    throw Error(std::string("tile step: the ") + which + " kernel has no grid, block or tiles");
  }
  KernelTimes t;
  t.footprint = footprint(k, device);
  const int64_t resident = int64_t{ctas_per_sm(k, device)} * device.sm_count;
  const int64_t waves = (k.ctas + resident - 1) / resident;
  t.cta_ns = k.duration_ns / static_cast<double>(waves);
  t.tiles_per_cta = (k.tiles() + k.ctas - 1) / k.ctas;
  t.tile_ns = t.cta_ns / static_cast<double>(t.tiles_per_cta);
  return t;
}

}  // namespace

int ctas_per_sm(const TileKernel& k, const TileDevice& device) {
  const Footprint f = footprint(k, device);
  int64_t n = device.limits.ctas;
  if (f.threads > 0) n = std::min(n, device.limits.threads / f.threads);
  if (f.registers > 0) n = std::min(n, device.registers_per_sm / f.registers);
  if (f.smem > 0) n = std::min(n, device.limits.smem_bytes / f.smem);
  return static_cast<int>(std::max<int64_t>(1, n));
}

TileStep simulate_tile_step(const TileKernel& producer, const TileKernel& consumer,
                            const TileReadsFn& reads, const TileDevice& device) {
  if (device.sm_count < 1) throw Error("tile step: no SMs");
  const KernelTimes p = kernel_times(producer, device, "producer");
  const KernelTimes c = kernel_times(consumer, device, "consumer");
  const int sms = device.sm_count;
  std::vector<SmLoad> load(sms);

  // Running CTAs by end time: (end, sm, kernel).
  struct Exit {
    double end;
    int sm;
    int kernel;
    bool operator>(const Exit& o) const { return end > o.end; }
  };
  std::priority_queue<Exit, std::vector<Exit>, std::greater<>> running;
  auto place = [&](const Footprint& f) -> int {
    int best = -1;
    for (int sm = 0; sm < sms; ++sm) {
      if (fits(load[sm], f, device) && (best < 0 || load[sm].ctas < load[best].ctas)) best = sm;
    }
    return best;
  };
  // Frees every CTA that ends by `now`.
  auto retire = [&](double now) {
    while (!running.empty() && running.top().end <= now) {
      const Exit e = running.top();
      running.pop();
      add(load[e.sm], e.kernel == 0 ? p.footprint : c.footprint, -1);
    }
  };

  // The tiles CTA `cta` of `k` runs, in order.
  auto for_tiles = [](const TileKernel& k, int64_t cta, const auto& visit) {
    if (k.grouped && k.ctas >= k.tiles()) {
      if (cta < k.tiles()) visit(model::grouped_tile(k.tiling, cta));
      return;
    }
    for (int64_t tile = cta; tile < k.tiles(); tile += k.ctas) visit(tile);
  };

  // The next CTA of a kernel: placed at `now`, or as soon after as a CTA's end makes room (one
  // always does: an idle SM takes any CTA); returns its SM.
  double now = 0;
  auto place_next = [&](const Footprint& f) {
    for (;;) {
      retire(now);
      if (const int sm = place(f); sm >= 0) {
        add(load[sm], f, +1);
        return sm;
      }
      now = running.top().end;
    }
  };

  // The producer: its CTAs placed from 0 as room allows; its tiles' ends.
  std::vector<double> tile_end(static_cast<size_t>(producer.tiles()), 0);
  double producer_end = 0;
  for (int64_t cta = 0; cta < producer.ctas; ++cta) {
    const int sm = place_next(p.footprint);
    double t = now;
    for_tiles(producer, cta, [&](int64_t tile) {
      t += p.tile_ns;
      tile_end[static_cast<size_t>(tile)] = t;
    });
    // A CTA without a tile of its own (grid above the tile count) exits at once.
    running.push({t, sm, 0});
    producer_end = std::max(producer_end, t);
  }
  // The consumer launches once every producer CTA has started.
  now += static_cast<double>(device.dependent_launch_ns);
  const double latency = static_cast<double>(device.signal_latency_ns);
  TileReads r;
  double consumer_end = now;
  for (int64_t cta = 0; cta < consumer.ctas; ++cta) {
    const int sm = place_next(c.footprint);
    double t = now;
    for_tiles(consumer, cta, [&](int64_t tile) {
      r.tiles.clear();
      r.all = false;
      reads(tile, r);
      double ready = t;
      if (r.all) ready = std::max(ready, producer_end + latency);
      for (int64_t read : r.tiles) {
        if (read < 0 || read >= producer.tiles()) {
          throw Error("tile step: consumer tile " + std::to_string(tile) + " reads producer tile " +
                      std::to_string(read) + " of " + std::to_string(producer.tiles()));
        }
        ready = std::max(ready, tile_end[static_cast<size_t>(read)] + latency);
      }
      const int64_t deps = static_cast<int64_t>(r.tiles.size()) + (r.all ? 1 : 0);
      const int64_t rounds = (deps + consumer.threads - 1) / consumer.threads;
      t = ready + static_cast<double>(rounds * device.check_round_ns) + c.tile_ns;
    });
    // Its work done, the CTA waits for the producer to end before it leaves.
    running.push({std::max(t, producer_end), sm, 1});
    consumer_end = std::max(consumer_end, t);
  }
  TileStep out;
  out.producer_end_ns = time_from_ns(producer_end);
  out.consumer_end_ns = time_from_ns(consumer_end);
  out.step_ns = std::max<TimeNs>(0, out.consumer_end_ns - out.producer_end_ns);
  return out;
}

}  // namespace megacut::simulator
