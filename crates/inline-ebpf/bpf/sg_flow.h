/* The source's per-flow key, shared by sg_source and the benchmark's
 * measurement floor (sg_floor.c): a 64-bit hash of the five-tuple. */
#ifndef SG_FLOW_H
#define SG_FLOW_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* Mix one 64-bit word into the flow hash (multiply-xorshift, as in
 * splitmix64's finaliser). */
static __always_inline __u64 sg_mix(__u64 h, __u64 w)
{
	h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}

static __always_inline __u64 sg_flow_hash(const __u32 *s, const __u32 *d, __u32 ports, __u8 proto)
{
	__u64 h = 0x9e3779b97f4a7c15ULL ^ proto;
	h = sg_mix(h, ((__u64)s[0] << 32) | s[1]);
	h = sg_mix(h, ((__u64)s[2] << 32) | s[3]);
	h = sg_mix(h, ((__u64)d[0] << 32) | d[1]);
	h = sg_mix(h, ((__u64)d[2] << 32) | d[3]);
	h = sg_mix(h, ports);
	return h * 0x94d049bb133111ebULL;
}

#endif
