// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Calibration programs for `streamgauge inline bench` (never used to
 * measure): they bound from below what any tc program can cost here.
 *
 * - sg_empty: returns at once (the hook's own cost, and the overhead of the
 *   kernel's run-time statistics).
 * - sg_floor_push / sg_floor_pop (and sg_floor_pop_xdp, sg_empty_xdp for
 *   a sink at XDP): insert an 8-byte Destination Options
 *   header (our loss layout, sequence 0) on egress and remove it on ingress,
 *   with the same helpers as sg_source/sg_sink but no filter, flow table,
 *   clock or ring buffer: the cost of carrying a header at all. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_inline.h"
#include "sg_xdp.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SG_FLOOR_TYPE 0x3e

SEC("tc")
int sg_empty(struct __sk_buff *skb)
{
	return SG_PASS;
}

SEC("tc")
int sg_floor_push(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 nh = ip6->nexthdr;
	__u16 plen = bpf_ntohs(ip6->payload_len);
	if ((nh != 17 && nh != 6) || plen == 0 || bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_NET, 0))
		return SG_PASS;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return TC_ACT_SHOT;
	ip6 = data + SG_ETH_HLEN;
	ip6->payload_len = bpf_htons(plen + 8);
	ip6->nexthdr = SG_NEXTHDR_DEST;
	__u8 *eh = data + SG_EH_OFF;
	eh[0] = nh;
	eh[1] = 0;
	eh[2] = SG_FLOOR_TYPE;
	eh[3] = 4;
	eh[4] = eh[5] = eh[6] = eh[7] = 0;
	return SG_PASS;
}

SEC("tc")
int sg_floor_pop(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 *eh = data + SG_EH_OFF;
	if (ip6->nexthdr != SG_NEXTHDR_DEST || eh[1] != 0 || eh[2] != SG_FLOOR_TYPE)
		return SG_PASS;
	struct {
		__be16 plen;
		__u8 nexthdr;
	} __attribute__((packed)) fix = { bpf_htons(bpf_ntohs(ip6->payload_len) - 8), eh[0] };
	if (!bpf_skb_store_bytes(skb, SG_ETH_HLEN + 4, &fix, 3, BPF_F_RECOMPUTE_CSUM))
		bpf_skb_adjust_room(skb, -8, BPF_ADJ_ROOM_NET, 0);
	return SG_PASS;
}

/* XDP counterparts for a sink attached at XDP: the hook alone, and the
 * removal alone (the same 54-byte slide as sg_sink_xdp). */
SEC("xdp.frags")
int sg_empty_xdp(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp.frags")
int sg_floor_pop_xdp(struct xdp_md *ctx)
{
	__u8 *eh = sg_xdp_dest_opts(ctx);
	if (!eh || eh[1] != 0 || eh[2] != SG_FLOOR_TYPE)
		return XDP_PASS;
	return sg_xdp_strip(ctx, 8, eh[0]) == -2 ? XDP_DROP : XDP_PASS;
}
