// SPDX-License-Identifier: GPL-2.0 OR MIT
/* tc egress: insert a Destination Options header carrying the delay and/or
 * loss option into IPv6 packets that match the configured five-tuple filter.
 * Layouts: spec/inline.md. Anything the program cannot or must not
 * instrument passes unchanged and is counted; the only drop is a packet whose
 * room was opened but whose header could not be written (counted as error). */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_maps.h"
#include "sg_flow.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Per-flow sequence state; max_entries is set by the agent before loading.
 * Keyed by a 64-bit hash of the five-tuple rather than the 40-byte tuple:
 * the kernel then hashes and compares 8 bytes per lookup instead of 40. Two
 * flows share state only if their hashes collide (for 10^4 live flows, odds
 * below 10^-11); the LRU eviction is the kernel's, as before. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1000);
	__type(key, __u64);
	__type(value, struct sg_flow_state);
} sg_flows SEC(".maps");

/* The kernel's tick rate, filled in by libbpf from the kernel's
 * configuration (/proc/config.gz or /boot/config-*); 0 where it cannot
 * tell. Known to the verifier, which keeps only the branch it selects. */
extern unsigned int CONFIG_HZ __kconfig __weak;

/* The flow-expiry clock, in ns: flows expire after seconds, so one tick
 * is precision enough. Where the tick rate is known this is jiffies
 * times the tick's length: bpf_jiffies64() is a single load the verifier
 * puts in place of the call, where bpf_ktime_get_coarse_ns() is a helper
 * call and a seqlock read per packet. Both clocks only count up; the
 * flow table never mixes them (CONFIG_HZ is fixed for a loaded program). */
static __always_inline __u64 sg_expiry_clock(void)
{
	switch (CONFIG_HZ) {
	case 100:
		return bpf_jiffies64() * 10000000ULL;
	case 250:
		return bpf_jiffies64() * 4000000ULL;
	case 1000:
		return bpf_jiffies64() * 1000000ULL;
	}
	return bpf_ktime_get_coarse_ns();
}

/* Per-CPU sampling (sampling = cpu): packets this CPU still skips before
 * the next instrumented one. Only this CPU touches its slot: no atomics. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sg_cpu_skip SEC(".maps");

/* One-in-N decided on this CPU, before any flow lookup: 1 = go on. */
static __always_inline int sg_cpu_sample(__u32 every)
{
	__u32 zero = 0;
	__u64 *left = bpf_map_lookup_elem(&sg_cpu_skip, &zero);
	if (!left)
		return 1;
	__u64 l = *left;
	if (l >= every) /* N was lowered while running */
		l = every - 1;
	if (l) {
		*left = l - 1;
		return 0;
	}
	*left = every - 1;
	return 1;
}

static __always_inline int sg_prefix_match(const __u32 *addr, const volatile __u8 *net, const volatile __u8 *mask)
{
	const volatile __u32 *n = (const volatile __u32 *)net;
	const volatile __u32 *m = (const volatile __u32 *)mask;
	return (addr[0] & m[0]) == n[0] && (addr[1] & m[1]) == n[1] && (addr[2] & m[2]) == n[2] &&
	       (addr[3] & m[3]) == n[3];
}

/* Whether a prefix mask is all zero (any address). */
static __always_inline int sg_any_addr(const volatile __u8 *mask)
{
	const volatile __u32 *m = (const volatile __u32 *)mask;
	return (m[0] | m[1] | m[2] | m[3]) == 0;
}

static __always_inline int sg_is_exthdr(__u8 nh)
{
	switch (nh) {
	case 0:   /* hop-by-hop */
	case 43:  /* routing */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253:
	case 254:
		return 1;
	}
	return 0;
}

/* Build the header for `mode` in `h` (32 bytes, zeroed by the caller) and
 * return its length; 0 if mode selects nothing. `mode` is the one the
 * caller read once and sized the room by: `streamgauge inline ctl` may
 * change cfg->mode while a packet is on its way, and a second read could
 * then write a layout of another length into the room. */
static __always_inline __u32 sg_build(__u8 *h, const volatile struct sg_config *cfg, __u8 mode, __u8 nh, __u32 seq,
				      __u64 now)
{
	h[0] = nh;
	if (mode & SG_MODE_PDM) {
		__u16 psn = bpf_htons((__u16)seq);
		h[1] = 1;
		h[2] = SG_PDM_TYPE;
		h[3] = 10;
		__builtin_memcpy(h + 6, &psn, 2);
		h[14] = 1; /* PadN, 0 bytes of data */
		return 16;
	}
	if (mode & SG_MODE_COMPACT) {
		__u32 t = bpf_htonl((__u32)(sg_ntp_at(now) >> SG_COMPACT_SHIFT));
		h[1] = 0;
		h[2] = cfg->delay_type;
		h[3] = 4;
		__builtin_memcpy(h + 4, &t, 4);
		return 8;
	}
	__u64 ts = 0;
	if (mode & SG_MODE_DELAY)
		ts = bpf_cpu_to_be64(sg_ntp_at(now));
	__u32 be_seq = bpf_htonl(seq);
	if ((mode & (SG_MODE_DELAY | SG_MODE_LOSS)) == (SG_MODE_DELAY | SG_MODE_LOSS)) {
		h[1] = 3;
		h[2] = cfg->loss_type;
		h[3] = 4;
		__builtin_memcpy(h + 4, &be_seq, 4);
		h[8] = 1; /* PadN, 4 bytes of data */
		h[9] = 4;
		h[14] = cfg->delay_type;
		h[15] = 16;
		__builtin_memcpy(h + 16, &ts, 8);
		return 32;
	}
	if (mode & SG_MODE_DELAY) {
		h[1] = 2;
		h[2] = 1; /* PadN, 2 bytes of data */
		h[3] = 2;
		h[6] = cfg->delay_type;
		h[7] = 16;
		__builtin_memcpy(h + 8, &ts, 8);
		return 24;
	}
	if (mode & SG_MODE_LOSS) {
		h[1] = 0;
		h[2] = cfg->loss_type;
		h[3] = 4;
		__builtin_memcpy(h + 4, &be_seq, 4);
		return 8;
	}
	return 0;
}

/* Per-flow sampling decision for a matching packet: 1 = instrument it
 * (per-CPU sampling was decided before the lookup). */
static __always_inline int sg_sample(struct sg_flow_state *st, const volatile struct sg_config *cfg, __u64 now)
{
	__u32 every = cfg->sampling == SG_SAMPLING_CPU ? 1 : cfg->sample_n;
	if (every > 1 && (__sync_fetch_and_add(&st->pkts, 1) % every) != 0) {
		sg_count(SG_C_SRC_SAMPLED_OUT);
		return 0;
	}
	__u64 gap = cfg->min_interval_ns;
	if (gap) {
		__u64 last = st->last_mark_ns;
		if (now - last < gap ||
		    __sync_val_compare_and_swap(&st->last_mark_ns, last, now) != last) {
			sg_count(SG_C_SRC_INTERVAL);
			return 0;
		}
	}
	return 1;
}

/* The configuration the program was loaded with, written into its
 * read-only data by the loader (crates/inline/src/program.rs) before the
 * load. The verifier knows every field, so in the path that uses it
 * (below) it keeps only the code this configuration needs: one layout,
 * no filter test for a wildcard, no sampling or interval code where they
 * are off. Zero (disabled) when no loader wrote it. */
const volatile struct sg_config sg_loaded = {};

/* The source for one packet under `cfg`. Instantiated twice: with the
 * configuration map's value (`loaded` 0: anything `inline ctl` may have
 * written) and with sg_loaded (`loaded` 1), where tests whose outcome the
 * configuration alone decides are skipped outright. */
static __always_inline int sg_source_with(struct __sk_buff *skb, const volatile struct sg_config *cfg, const int loaded)
{
	if (!cfg->enabled)
		return SG_PASS;

	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 4 > data_end) {
		if (bpf_skb_pull_data(skb, SG_EH_OFF + 4))
			return SG_PASS;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		if (data + SG_EH_OFF + 4 > data_end)
			return SG_PASS;
	}
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	const __u32 *saddr = (const __u32 *)&ip6->saddr;
	const __u32 *daddr = (const __u32 *)&ip6->daddr;
	int src_any = loaded && sg_any_addr(cfg->src_mask);
	int dst_any = loaded && sg_any_addr(cfg->dst_mask);
	if (!(src_any || sg_prefix_match(saddr, cfg->src_net, cfg->src_mask)) ||
	    !(dst_any || sg_prefix_match(daddr, cfg->dst_net, cfg->dst_mask)))
		return SG_PASS;

	__u8 nh = ip6->nexthdr;
	if (nh == 44 || sg_is_exthdr(nh)) {
		/* The five-tuple is behind the extension headers: count only
		 * when the protocol/port part of the filter is a wildcard. */
		if (cfg->proto == 0 && cfg->sport == 0 && cfg->dport == 0)
			sg_count(nh == 44 ? SG_C_SRC_FRAGMENT : (ip6->payload_len == 0 ? SG_C_SRC_JUMBO : SG_C_SRC_EXTHDR));
		return SG_PASS;
	}
	if (cfg->proto && cfg->proto != nh)
		return SG_PASS;

	__u16 sport = 0, dport = 0;
	if (nh == IPPROTO_TCP || nh == IPPROTO_UDP) {
		__u16 *ports = data + SG_EH_OFF;
		sport = bpf_ntohs(ports[0]);
		dport = bpf_ntohs(ports[1]);
	}
	if ((cfg->sport && cfg->sport != sport) || (cfg->dport && cfg->dport != dport))
		return SG_PASS;
	sg_count(SG_C_SRC_MATCHED);

	__u16 plen = bpf_ntohs(ip6->payload_len);
	if (plen == 0) {
		sg_count(SG_C_SRC_JUMBO);
		return SG_PASS;
	}
	if (nh == IPPROTO_UDP && skb->gso_segs > 1) {
		sg_count(SG_C_SRC_UDP_GSO);
		return SG_PASS;
	}

	if (cfg->sampling == SG_SAMPLING_CPU && cfg->sample_n > 1 && !sg_cpu_sample(cfg->sample_n)) {
		sg_count(SG_C_SRC_SAMPLED_OUT);
		return SG_PASS;
	}

	__u8 mode = cfg->mode;
	/* Per-flow state serves the sequence number (loss, PDM), per-flow
	 * sampling and the minimum interval between marks. A delay-only
	 * layout with none of those needs no flow table: no lookup. */
	int seq_layout = (mode & (SG_MODE_LOSS | SG_MODE_PDM)) != 0;
	int per_flow = seq_layout || cfg->min_interval_ns ||
		       (cfg->sampling != SG_SAMPLING_CPU && cfg->sample_n > 1);
	__u64 now = 0;
	if ((mode & SG_MODE_DELAY) || cfg->min_interval_ns)
		now = bpf_ktime_get_ns();
	struct sg_flow_state *st = NULL;
	if (per_flow) {
		__u64 key = sg_flow_hash(saddr, daddr, ((__u32)sport << 16) | dport, nh);
		/* Flow expiry needs seconds, not nanoseconds: a tick's
		 * precision costs no clock read (sg_expiry_clock), and
		 * last_seen changes once per tick. */
		__u64 seen = sg_expiry_clock();
		st = bpf_map_lookup_elem(&sg_flows, &key);
		if (!st || seen - st->last_seen_ns > cfg->flow_timeout_ns) {
			struct sg_flow_state fresh = { .last_seen_ns = seen };
			bpf_map_update_elem(&sg_flows, &key, &fresh, BPF_ANY);
			st = bpf_map_lookup_elem(&sg_flows, &key);
			if (!st) {
				sg_count(SG_C_SRC_ERROR);
				return SG_PASS;
			}
		} else if (st->last_seen_ns != seen) {
			st->last_seen_ns = seen;
		}
		if (!sg_sample(st, cfg, now))
			return SG_PASS;
	}

	__u32 hlen = sg_hlen(mode);
	if (!hlen)
		return SG_PASS;
	/* Every IPv6 link carries 1280 bytes: only larger packets need the
	 * (helper) MTU check. skb->len counts the Ethernet header here. */
	if (skb->len + hlen > SG_ETH_HLEN + 1280) {
		__u32 mtu_len = 0;
		if (bpf_check_mtu(skb, 0, &mtu_len, hlen, 0)) {
			sg_count(SG_C_SRC_MTU);
			return SG_PASS;
		}
	}
	if (bpf_skb_adjust_room(skb, hlen, BPF_ADJ_ROOM_NET, 0)) {
		sg_count(SG_C_SRC_ERROR);
		return SG_PASS;
	}
	__u32 seq = seq_layout && st ? __sync_fetch_and_add(&st->seq, 1) : 0;
	__u8 h[32] = {};
	sg_build(h, cfg, mode, nh, seq, now);
	/* The room is open at SG_EH_OFF and the head is private now: write
	 * the header and fix the IPv6 header with direct packet access (no
	 * helper calls). Constant sizes keep the verifier happy. */
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + hlen > data_end || data + SG_EH_OFF + 8 > data_end) {
		/* The room is open but the header cannot be written: the
		 * packet is malformed now, so drop it rather than send garbage. */
		sg_count(SG_C_SRC_ERROR);
		return TC_ACT_SHOT;
	}
	ip6 = data + SG_ETH_HLEN;
	ip6->payload_len = bpf_htons(plen + hlen);
	ip6->nexthdr = SG_NEXTHDR_DEST;
	__u8 *eh = data + SG_EH_OFF;
	if (hlen == 32 && (void *)eh + 32 <= data_end)
		__builtin_memcpy(eh, h, 32);
	else if (hlen == 24 && (void *)eh + 24 <= data_end)
		__builtin_memcpy(eh, h, 24);
	else if (hlen == 16 && (void *)eh + 16 <= data_end)
		__builtin_memcpy(eh, h, 16);
	else
		__builtin_memcpy(eh, h, 8);
	sg_count(SG_C_SRC_INSTRUMENTED);
	return SG_PASS;
}

SEC("tc")
int sg_source(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	struct sg_config *cfg = sg_get_config();
	if (!cfg)
		return SG_PASS;
	/* The loader marks the configuration it wrote with `loaded`; every
	 * later write (`inline ctl`, the control API) clears it. While it
	 * is set, the map holds sg_loaded's values, so the specialised path
	 * gives the same result as the general one. */
	if (cfg->loaded)
		return sg_source_with(skb, &sg_loaded, 1);
	return sg_source_with(skb, cfg, 0);
}
