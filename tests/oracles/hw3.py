"""hw3-sharding at the book's sample numbers, by hand (see the package docstring); moved
from tests/test_hw3.py, whose homework-specific tests read it too."""

A = "hw3-sharding"
POINTS = 22

# Problem inputs, restated from the prompts (datasheet figures, not the catalog).
W_V5P, W_V5E = 9e10, 4.5e10             # one direction of one ICI link, bytes/s
C_V5P, C_V5E = 4.59e14, 1.97e14         # bf16 FLOPs/s
NVLINK, NIC = 18 * 2.5e10, 5e10         # H100 per GPU, each way
ALPHA = 1e-6                            # s per hop / ring step
V3, V4, V5, V6 = 8192 * 4096 * 2, 4096 * 4096 * 2, 8 * 4096 * 2, 2e9
AG16_V5P = V3 * 15 / 16 / (2 * W_V5P) + 8 * ALPHA
T_MATH7 = 2 * 4096 * (16384 // 16) * 8192 / C_V5E
T_RS7 = 4096 * 8192 * 2 * 15 / 16 / (2 * W_V5E) + 8 * ALPHA

# answer name -> the value worked out by hand
BY_HAND = {
    "a_local_shape": [1024, 512],
    "a_bytes_per_chip": 1024 * 512 * 2,
    "w_bytes_per_chip": 1024 * 2048 * 2,
    "w_bytes_mesh": 2 * 4096 * 16384 * 2,
    "c_bytes_a": 256 * 2048 * 2,
    "v_b": 256 * 8192 * 2,
    "v_c": 1024 * 16384 * 2,
    "v_d": 1024 * 8192 * 2,
    "t_allgather": AG16_V5P,
    "t_allreduce": 2 * AG16_V5P,
    "t_alltoall": V3 / (8 * W_V5P) + 8 * ALPHA,
    "t_allgather_2d": V3 * 15 / 16 / (4 * W_V5P) + 4 * ALPHA,
    "t_ag_line": V4 * 7 / 8 / W_V5E + 7 * ALPHA,
    "t_ar_ring16": 2 * (V4 * 15 / 16 / (2 * W_V5E) + 8 * ALPHA),
    "t_small_allreduce": 2 * (V5 * 3 / 4 / (2 * W_V5P) + 2 * ALPHA),
    "v_star": 16 ** 2 * ALPHA * W_V5P / 15,
    "t_node_allreduce": 2 * V6 * 7 / 8 / NVLINK + 14 * ALPHA,
    "t_hier_allreduce": (2 * (V6 * 7 / 8 / NVLINK + 7 * ALPHA)
                         + 2 * (V6 / 8) * 3 / 4 / NIC + 6 * ALPHA),
    "tokens_per_chip_star": C_V5P * 15 / 16 / (2 * W_V5P),
    "d_star_allreduce": C_V5P * 7 / W_V5P,
    "t_layer_serial": T_MATH7 + T_RS7,
    "w_shard_bytes": 32 * 16 * 4,
    "allreduce_bytes": 8 * 64 * 4,
}
# the non-numeric answers, as the sandbox reports them (a PartitionSpec arrives as a list)
OTHER = {
    "collective_a": "none", "collective_b": "AllGather", "collective_c": "ReduceScatter",
    "collective_d": "AllGather",
    "a_spec": ["X", None], "w_spec": [None, "Y"], "w_tp_spec": ["Y", None],
}

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    # the replicated axis forgotten in memory
    # at the sample numbers Z = 2 = bf16's bytes: one hint names both causes
    ("w_bytes_per_chip", 4096 * 16384 * 2 / 64, "holds a whole copy of W (one chip holds 1/(X·Y)"),
    ("w_bytes_per_chip", 4096 * 16384 * 2 / 64, "bf16 takes 2 bytes"),
    ("w_bytes_mesh", 4096 * 16384 * 2, "Count the copies"),
    ("w_shard_bytes", 32 * 64 * 4 / 8, "not 1/8"),
    ("a_local_shape", [2048, 512], "4 × 2 = 8 ways"),
    # V of a collective: the gathered / unreduced array, not a shard
    ("v_b", 256 * 1024 * 2, "not the shard"),
    ("v_b", 1024 * 8192 * 2, "I stays split over X"),
    ("v_c", 1024 * 16384 * 2 / 4, "before the reduction"),
    ("v_d", 8192 * 16384 * 2, "smaller operand"),
    # an AllReduce priced as one AllGather
    ("t_allreduce", AG16_V5P, "twice an AllGather"),
    ("t_ar_ring16", V4 * 15 / 16 / (2 * W_V5E) + 8 * ALPHA, "twice an AllGather"),
    ("t_small_allreduce", V5 * 3 / 4 / (2 * W_V5P) + 2 * ALPHA, "twice the bytes"),
    ("t_node_allreduce", V6 * 7 / 8 / NVLINK + 7 * ALPHA, "twice an AllGather"),
    ("d_star_allreduce", C_V5P * 7 / W_V5P / 2, "twice a ReduceScatter"),
    # bidirectional links counted one way (ring priced as a line) or doubled again
    ("t_allgather", V3 * 15 / 16 / W_V5P + 8 * ALPHA, "two links, 2W"),
    ("t_allgather", V3 * 15 / 16 / (4 * W_V5P) + 8 * ALPHA, "not 4W"),
    ("t_allreduce", 2 * (V3 * 15 / 16 / W_V5P + 15 * ALPHA), "both ways round the ring"),
    ("t_ar_ring16", 2 * (V4 * 15 / 16 / W_V5E + 15 * ALPHA), "has wraparound"),
    ("t_ag_line", V4 * 7 / 8 / (2 * W_V5E) + 4 * ALPHA, "no wraparound"),
    ("v_star", 16 ** 2 * ALPHA * W_V5P / 15 / 2, "two links: 2W, not W"),     # ring bandwidth W
    ("v_star", 16 ** 2 * ALPHA * W_V5P / 15 * 2, "already counts both directions"),  # 4W
    ("tokens_per_chip_star", C_V5P * 15 / 16 / W_V5P, "not W"),
    ("tokens_per_chip_star", C_V5P * 15 / 16 / (4 * W_V5P), "not 4W"),
    ("d_star_allreduce", 2 * C_V5P * 7 / W_V5P, "2W per chip, not W"),
    ("t_node_allreduce", 2 * V6 * 7 / 8 / 2.5e10 + 14 * ALPHA, "all 18 of its NVLink links"),
    # the ReduceScatter forgotten in the contracting case (or an AllReduce in its place)
    ("t_layer_serial", T_MATH7, "must be ReduceScattered"),
    ("t_layer_serial", T_MATH7 + 2 * T_RS7, "costs twice as much"),
    ("t_layer_serial", max(T_MATH7, T_RS7), "Nothing overlaps"),
    # latency ignored for a small message, or the bandwidth term dropped
    ("t_small_allreduce", 2 * V5 * 3 / 4 / (2 * W_V5P), "the latency dominates"),
    ("t_small_allreduce", 4 * ALPHA, "Add the bandwidth term"),
    ("t_alltoall", V3 / (8 * W_V5P), "Add the latency"),
    # cross-node bandwidth inside a node, and NVLink across nodes
    ("t_node_allreduce", 2 * V6 * 7 / 8 / NIC + 14 * ALPHA, "NIC is for other nodes"),
    ("t_hier_allreduce", 2 * V6 * 31 / 32 / NIC + 62 * ALPHA, "flat ring"),
    ("t_hier_allreduce", 2 * V6 * 7 / 8 / NVLINK + 2 * V6 * 3 / 4 / NIC, "only that slice"),
    ("t_hier_allreduce", 2 * V6 * 7 / 8 / NVLINK + 2 * (V6 / 8) * 3 / 4 / NVLINK, "through the NICs"),
    ("t_hier_allreduce", 2 * (V6 / 8) * 3 / 4 / NIC + 6 * ALPHA, "inside the nodes"),
    # (N-1)/N dropped where the part asks for it; several axes
    ("t_allgather", V3 / (2 * W_V5P) + 8 * ALPHA, "(N − 1)/N"),
    ("v_star", 16 * ALPHA * W_V5P, "(N − 1)/N"),
    ("t_allgather_2d", AG16_V5P, "bandwidths add"),
    ("t_alltoall", AG16_V5P, "one chip only"),
    ("allreduce_bytes", 16 * 64 * 4, "B stays split over X"),
    ("allreduce_bytes", 8 * 64 * 4 / 4, "not a quarter"),
]
