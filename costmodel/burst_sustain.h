/*
 * burst_sustain.h — rates measured in short bursts, derated to what the GPU sustains at its
 * power cap.
 *
 * A GEMM or attention benchmark of a few dozen launches runs at the highest boost clock; a
 * training step holds the GPU at its power cap, where the driver lowers the SM clock
 * (nvmlClocksEventReasonSwPowerCap, gemm_headroom.c). The Hopper presets carry sustained
 * figures we measured; the Blackwell presets' gemm_efficiency_max (ml-engineering MAMF) and
 * attention rates (cuDNN's own benchmark) are burst figures. A preset states that with a
 * reference measurement of its GPU family:
 *   gpu.sustained_ref_ratio      the sustained / burst rate measured on the reference part,
 *   gpu.sustained_ref_power_w    that part's power cap,
 *   gpu.sustained_ref_clock_mhz  that part's highest SM clock,
 * and its own gpu.max_sm_clock_mhz and gpu.tdp_w. The fraction of the burst rate this part
 * sustains is
 *     k = ratio x (tdp / ref_power)^(1/3) x (ref_clock / max_clock),  at most 1:
 * the reference's sustained clock moved to this part's cap by the project's power rule
 * (clock ~ power^(1/3), system_gemm_power_scale), over this part's own highest clock, at
 * which its burst figures were taken. system_from_json applies k once, at load, to
 * gemm_efficiency_max, attention_efficiency and the attention_rates table; a calibration
 * profile that overlays gemm_efficiency_max afterwards replaces it with its measured
 * (sustained) figure. Presets without the fields (all measured sustained) are unchanged.
 *
 * The Blackwell reference (b200.json's sources): flashinfer-ai/flashinfer PR #2899, B200,
 * FlashAttention-4 bf16 (b 4, s 8192, h 16, d 128) launched back to back: 1450 TFLOP/s over
 * iterations 10-19, 1237 once throttled (iterations 70-79) at ~1000 W, SM clock 1965 ->
 * ~1580 MHz: ratio 1237/1450 = 0.853 at 1000 W and 1965 MHz.
 */
#ifndef PLAN_BURST_SUSTAIN_H
#define PLAN_BURST_SUSTAIN_H

#include "system.h"

/* k above; 1 where the preset gives no reference (or no TDP / clock to move it with). */
double burst_sustain_fraction(const system_spec *sys);

/* Multiplies the system's burst figures (gemm_efficiency_max, attention_efficiency, the
 * attention_rates points) by burst_sustain_fraction and records it in
 * sys->sustained_over_burst. Called once by system_from_json. */
void burst_sustain_apply(system_spec *sys);

/* Multiplies every rate of an attention table by k (0 < k < 1; else nothing): the attention
 * part of burst_sustain_apply, and a calibration profile's burst-measured attention table
 * derated with its base system's sustained_over_burst (costmodel/profile.c). */
void burst_sustain_derate_table(attn_table *t, double k);

#endif
