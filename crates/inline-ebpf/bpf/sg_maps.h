/* Maps and helpers common to both programs. Each object gets its own copy. */
#ifndef SG_MAPS_H
#define SG_MAPS_H

#include <bpf/bpf_helpers.h>
#include "sg_inline.h"

/* Written by the agent and by `streamgauge inline ctl`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sg_config);
} sg_config SEC(".maps");

/* Wall clock minus monotonic clock, in ns; refreshed by the agent so that
 * timestamps follow NTP adjustments of the wall clock. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sg_clock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SG_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} sg_counters SEC(".maps");

static __always_inline void sg_count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&sg_counters, &idx);
	if (c)
		*c += 1;
}

static __always_inline void sg_add(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&sg_counters, &idx);
	if (c)
		*c += n;
}

static __always_inline struct sg_config *sg_get_config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&sg_config, &zero);
}

/* Wall-clock time as a 64-bit NTP timestamp (host byte order), from a
 * monotonic reading `mono_ns` (bpf_ktime_get_ns) the caller already has. */
static __always_inline __u64 sg_ntp_at(__u64 mono_ns)
{
	__u32 zero = 0;
	__u64 *off = bpf_map_lookup_elem(&sg_clock, &zero);
	__u64 ns = mono_ns + (off ? *off : 0);
	__u64 sec = ns / 1000000000ULL;
	__u64 rem = ns - sec * 1000000000ULL;
	/* rem * 2^32 / 10^9 without a second division: 2^61 / 10^9 rounded
	 * down is 2305843009 (rem < 2^30, so the product fits in 64 bits);
	 * the result is at most one 2^-32 s step low. */
	return ((sec + SG_NTP_UNIX_OFFSET) << 32) | ((rem * 2305843009ULL) >> 29);
}

#endif
