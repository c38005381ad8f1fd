/* Removing an extension header at XDP, shared by sg_sink_xdp and the
 * benchmark's sg_floor_pop_xdp. */
#ifndef SG_XDP_H
#define SG_XDP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_inline.h"

/* The extension header of an Ethernet frame carrying IPv6 with a
 * Destination Options header next, with 8 bytes of it readable; NULL for
 * any other frame. */
static __always_inline __u8 *sg_xdp_dest_opts(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return NULL;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	if (eth->h_proto != bpf_htons(ETH_P_IPV6) || ip6->nexthdr != SG_NEXTHDR_DEST)
		return NULL;
	return data + SG_EH_OFF;
}

/* Remove the `hlen` bytes (a multiple of 8, at most 32) that follow the
 * IPv6 header of an Ethernet frame whose extension header said `nh` came
 * next: fix the IPv6 fields, keep the 54 bytes of Ethernet + IPv6 header,
 * drop `hlen` bytes at the front, write the 54 bytes back. There is no skb
 * yet, so no helper has to keep one consistent: this is what makes XDP
 * cheaper than tc here. The header is copied as 8-byte words (the BPF JITs
 * of the architectures with efficient unaligned access, x86-64 included,
 * accept unaligned packet loads; the verifier checks only bounds there).
 * Returns 0 when done, -1 when the frame was left unchanged, -2 when it
 * was changed but could not be completed (drop it). */
static __always_inline int sg_xdp_strip(struct xdp_md *ctx, __u32 hlen, __u8 nh)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + SG_EH_OFF > data_end)
		return -1;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	ip6->payload_len = bpf_htons(bpf_ntohs(ip6->payload_len) - hlen);
	ip6->nexthdr = nh;
	const __u64 *from = data;
	__u64 w0 = from[0], w1 = from[1], w2 = from[2], w3 = from[3], w4 = from[4], w5 = from[5];
	__u32 w6 = *(const __u32 *)(data + 48);
	__u16 w7 = *(const __u16 *)(data + 52);
	if (bpf_xdp_adjust_head(ctx, (int)(hlen & 63)))
		return -2;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + SG_EH_OFF > data_end)
		return -2;
	__u64 *to = data;
	to[0] = w0;
	to[1] = w1;
	to[2] = w2;
	to[3] = w3;
	to[4] = w4;
	to[5] = w5;
	*(__u32 *)(data + 48) = w6;
	*(__u16 *)(data + 52) = w7;
	return 0;
}

#endif
