// uapi.h: the ABI between the kernel and user programs.
//
// Owns: system call numbers, open() and fcntl() flags, poll()'s struct
// pollfd and bits, struct stat, file types,
// device majors, struct sysinfo, the tick length, and the RDMA verbs ABI:
// every libibverbs constant and structure the SYS_rdma_* calls carry
// (user/lib/ibverbs/ibverbs.h takes them from here). Both the kernel
// (kernel/sys/syscall.c dispatches by SYS_* through a table) and user space
// (build/user/lib/c/usys.S is generated from the SYS_* lines below) include this file,
// so it must stay free of kernel-only types: it uses only the C base types.
//
// Adding a syscall: add a SYS_ line here, an entry in the kernel's table,
// and a prototype in user/lib/c/user.h; the user stub is generated.
#ifndef UAPI_H
#define UAPI_H

// System call numbers. Numbers are never reused.
#define SYS_fork      1
#define SYS_exit      2
#define SYS_wait      3
#define SYS_pipe      4
#define SYS_read      5
#define SYS_write     6
#define SYS_close     7
#define SYS_kill      8
#define SYS_exec      9
#define SYS_open     10
#define SYS_mknod    11
#define SYS_unlink   12
#define SYS_fstat    13
#define SYS_link     14
#define SYS_mkdir    15
#define SYS_chdir    16
#define SYS_dup      17
#define SYS_getpid   18
#define SYS_sbrk     19
#define SYS_sleep    20
#define SYS_uptime   21
#define SYS_kclock_ns 22  // monotonic nanoseconds since boot, from the time CSR (user
                          // space's clock_ns() reads the CSR itself, see SYS_timebase)
#define SYS_halt     23   // power off through the test finisher; arg = exit status
#define SYS_sysinfo  24   // fill a struct sysinfo
#define SYS_timebase 25   // Hz of the time CSR, which user mode may read (rdtime); 0 if it may not
#define SYS_getrandom 26  // (buf, len, flags 0) -> bytes written: min(len, GETRANDOM_MAX);
                          // -1 for a bad pointer, len < 0 or flags != 0
#define GETRANDOM_MAX 256 // bytes per getrandom call (kernel/dev/random.c)
#define SYS_poll     27   // (struct pollfd *fds, nfds 0..NOFILE, timeout_ms <0 = forever)
                          // -> fds with revents != 0, 0 on timeout; -1 bad pointer/nfds, killed
#define SYS_fcntl    28   // (fd, F_GETFL) -> flags; (fd, F_SETFL, flags): sets O_NONBLOCK only
#define SYS_pagestat 29   // (struct pagestat *out): demand paging's counters (kernel/core/pager.c)
// 40..59 are reserved for the network stack, 60..99 for RDMA verbs.
// Network (kernel/sys/sysnet.c, sysbench.c; sockets: kernel/net/socket.c). A socket is a file descriptor: close()
// closes it, fork() and dup() share it, poll() reports POLLIN while a
// datagram waits, read() takes the next datagram (its source is lost) and
// write() fails (-1: no connected UDP). Addresses are host byte order.
#define SYS_socket    40  // (SOCK_UDP | SOCK_ICMP) -> fd
#define SYS_bind      41  // (s, port): UDP port, 0 = any ephemeral; 4791 is reserved
#define SYS_sendto    42  // (s, buf, n, const struct net_addr *to) -> n; ICMP: to->port = seq
#define SYS_recvfrom  43  // (s, buf, n, struct net_addr *from, timeout_ms <0 = forever) -> n, -2 timeout;
                          // O_NONBLOCK and nothing queued: -1 at once
#define SYS_sockclose 44  // (s): close(s) for a socket fd only
#define SYS_netstat   45  // (char *buf, n) -> bytes of "name value\n" text
#define SYS_netinfo   46  // (struct net_info *out)
#define SYS_arpwait   47  // (ip, unsigned char mac[6], timeout_ms) -> 0, -2 timeout
#define SYS_sendzc    48  // (s, buf, n, to): sendto, payload DMA'd from pinned pages (UDP csum 0)
#define SYS_netblast  49  // (s, buf, n, to, count 1..2^20): sendzc's datagram count times -> sent

// RDMA verbs (kernel/sys/sysrdma.c; user/lib/ibverbs/ibverbs.c gives them libibverbs names).
// Objects are named by small per-kind handles (a completion channel by a
// file descriptor) that only their creating process may use; every call returns -1 on any error (bad handle, bad
// pointer, bad argument, object busy).
#define SYS_rdma_query_device 60  // (struct rdma_device_info *out)
#define SYS_rdma_query_port   61  // (port 1, struct rdma_port_info *out)
#define SYS_rdma_alloc_pd     62  // () -> pd
#define SYS_rdma_dealloc_pd   63  // (pd); -1 while MRs/QPs use it
#define SYS_rdma_reg_mr       64  // (pd, addr, length, access, struct rdma_mr_keys *out) -> mr
#define SYS_rdma_dereg_mr     65  // (mr); -1 while posted WRs or the responder use it
#define SYS_rdma_create_chan  66  // () -> completion channel: a file descriptor (poll: POLLIN
                                  // while an event waits; close() frees it once no CQ uses it)
#define SYS_rdma_destroy_chan 67  // (chan): close it; -1 (and still open) while CQs use it
#define SYS_rdma_create_cq    68  // (cqe, chan or -1, cookie) -> cq; RDMA_NO_RESOURCES: none left
#define SYS_rdma_destroy_cq   69  // (cq); -1 while QPs use it
#define SYS_rdma_poll_cq      70  // (cq, n, struct rdma_wc *wc) -> completions copied
#define SYS_rdma_req_notify   71  // (cq, solicited_only): arm one event
#define SYS_rdma_get_cq_event 72  // (chan, unsigned long long *cookie) -> cq; sleeps
                                  // (O_NONBLOCK: -1 at once if no event waits)
#define SYS_rdma_create_qp    73  // (struct rdma_qp_create *io) -> qp; RDMA_NO_RESOURCES: none left
#define RDMA_NO_RESOURCES     (-2) // create_qp/cq: the device has no slot or ring pages left (ENOMEM)
#define SYS_rdma_modify_qp    74  // (qp, struct rdma_qp_attr *attr, IBV_QP_* | RDMA_QP_* mask)
#define SYS_rdma_query_qp     75  // (qp, struct rdma_qp_attr *out)
#define SYS_rdma_destroy_qp   76  // (qp)
#define SYS_rdma_post_send    77  // (qp, struct rdma_send_wr *wr, n, int *err) -> WRs accepted;
                                  // err (if not 0): RDMA_E* of the first refused WR
#define SYS_rdma_post_recv    78  // (qp, struct rdma_recv_wr *wr, n, int *err) -> as post_send
#define SYS_rdma_get_async    79  // (struct rdma_async_event *out, block)
#define SYS_rdma_qp_stats     80  // (i, struct rdma_qp_stats *out): i-th QP of the device
#define SYS_rdma_set_neigh    81  // (ipv4 host order, unsigned char mac[6])
#define SYS_rdma_wait_write   82  // (const uchar *addr, old, timeout_ms) -> 0 changed, -2 timeout
#define SYS_rdma_wait_cq      83  // (cq, timeout_ms) -> 0 a completion (or overrun) waits, -2 timeout
#define SYS_rdma_dev_stats    84  // (struct rdma_dev_stats *out): the device-wide counters
#define SYS_rdma_create_ah    85  // (struct rdma_ah_attr *attr) -> ah; RDMA_NO_ROUTE: no ARP answer
#define RDMA_NO_ROUTE         (-3) // create_ah: the destination's MAC could not be resolved (EHOSTUNREACH)
#define SYS_rdma_destroy_ah   86  // (ah)
// Shared receive queues (proto-spec srq.md).
#define SYS_rdma_create_srq   87  // (struct rdma_srq_create *io) -> srq; RDMA_NO_RESOURCES: none left
#define SYS_rdma_modify_srq   88  // (srq, struct rdma_srq_attr *attr, IBV_SRQ_* mask)
#define SYS_rdma_query_srq    89  // (srq, struct rdma_srq_attr *out)
#define SYS_rdma_destroy_srq  90  // (srq); RDMA_BUSY while a QP uses it
#define RDMA_BUSY             (-4) // destroy_srq: a QP still uses the SRQ (EBUSY) [SRQ-VERB-4]
#define SYS_rdma_post_srq_recv 91 // (srq, struct rdma_recv_wr *wr, n, int *err) -> as post_recv

// The kernel's rdma_cm (kernel/rdma/cma.c, per process: kernel/rdma/ucma.c;
// user/lib/rdmacm/rdma_cm.c gives them librdmacm's names). 100..119.
// An id is a small handle valid only in the process that made it (a
// listener's new ids belong to the listener's process); an event channel
// is a file descriptor (poll: POLLIN while an event waits; O_NONBLOCK:
// get_event fails with EAGAIN instead of sleeping; close() destroys the
// channel's ids). Every call returns >= 0, or a negated errno: -EBADF
// (not a channel), -EINVAL (bad handle, another process's id, an argument
// out of range, the id's state does not allow the call), -EFAULT (bad
// pointer), -ENOMEM (no room), -EADDRINUSE, -EAGAIN. Addresses and ports
// are host order.
#define SYS_ucma_create_chan  100 // () -> fd
#define SYS_ucma_create_id    101 // (chan fd, port space RDMA_PS_TCP/UDP, cookie) -> id
#define SYS_ucma_destroy_id   102 // (id): its connection DREQ'd, its events dropped
#define SYS_ucma_bind         103 // (id, ip, port): ip 0 = any of ours; port 0 = an ephemeral one
#define SYS_ucma_resolve_addr 104 // (id, src ip or 0, dst ip, dst port, timeout_ms): ADDR_RESOLVED
                                  // or ADDR_ERROR (-EHOSTUNREACH: no ARP answer in time)
#define SYS_ucma_resolve_route 105 // (id, timeout_ms): ROUTE_RESOLVED
#define SYS_ucma_listen       106 // (id, backlog): CONNECT_REQUEST events with new ids
#define SYS_ucma_connect      107 // (id, const struct ucma_conn_param *): REQ; CONNECT_RESPONSE,
                                  // REJECTED (status: the REJ reason) or UNREACHABLE (-ETIMEDOUT).
                                  // RDMA_PS_UDP: SIDR_REQ; ESTABLISHED (param: the peer's QPN,
                                  // Q_Key) or UNREACHABLE (status: the SIDR_REP's, or -ETIMEDOUT)
#define SYS_ucma_accept       108 // (id, const struct ucma_conn_param *): passive: REP (QP at RTS
                                  // first); active after CONNECT_RESPONSE: RTU (param NULL), ESTABLISHED.
                                  // RDMA_PS_UDP: SIDR_REP (param's QPN, RDMA_UDP_QKEY), no event
#define SYS_ucma_reject       109 // (id, const void *private_data, len); RDMA_PS_UDP: SIDR_REP status 2
#define SYS_ucma_disconnect   110 // (id): DREQ (or DREP to the peer's); DISCONNECTED
#define SYS_ucma_init_qp_attr 111 // (id, qp_state INIT/RTR/RTS, struct rdma_qp_attr *out) -> IBV_QP_* mask
#define SYS_ucma_get_event    112 // (chan fd, struct ucma_event *out): sleeps until one waits
#define SYS_ucma_migrate_id   113 // (id, chan fd): the id's future and waiting events go there
#define SYS_ucma_established  114 // (id): passive, the QP received before the RTU (rdma_notify)

// errno values (Linux's): user/lib/c's errno, and the kernel rdma_cm's
// event statuses and SYS_ucma_* results (negated).
#define EPERM     1
#define ENOENT    2
#define EINTR     4
#define EIO       5
#define EBADF     9
#define EAGAIN   11
#define ENOMEM   12
#define EACCES   13
#define EFAULT   14
#define EBUSY    16
#define EEXIST   17
#define ENODEV   19
#define ENOTDIR  20
#define EISDIR   21
#define EINVAL   22
#define EMFILE   24
#define ENOSPC   28
#define ESPIPE   29
#define EPIPE    32
#define EDOM     33
#define ERANGE   34
#define ENOSYS   38
#define ENAMETOOLONG 36
#define EAFNOSUPPORT 97
#define EADDRINUSE   98
#define ECONNRESET  104
#define EISCONN     106
#define ETIMEDOUT   110
#define ECONNREFUSED 111
#define EHOSTUNREACH 113
#define EWOULDBLOCK EAGAIN

// Scheduler tick: sleep(n) and uptime() count ticks of this length.
#define TICK_NS 10000000ULL   // 10 ms, 100 ticks per second

// open() flags (Linux's values). There is no O_APPEND.
#define O_RDONLY  0x000
#define O_WRONLY  0x001
#define O_RDWR    0x002
#define O_CREATE  0x040
#define O_CREAT   O_CREATE   // POSIX's name
#define O_EXCL    0x080      // with O_CREATE: fail if the path exists
#define O_TRUNC   0x200
#define O_NONBLOCK 0x800    // read, recvfrom, get_cq_event return -1 at once instead of sleeping

// fcntl() commands (Linux's values).
#define F_GETFL   3
#define F_SETFL   4

// poll(): Linux's struct pollfd and event bits. A negative fd is skipped
// (revents 0); a descriptor that is not open gets POLLNVAL. POLLERR,
// POLLHUP and POLLNVAL are reported whether asked for or not.
// Open files per process (POSIX's OPEN_MAX; the kernel's NOFILE), so
// also the most descriptors one poll() takes.
#define OPEN_MAX 16
struct pollfd {
  int fd;
  short events;             // what the caller waits for
  short revents;            // what is true now (set by the kernel)
};
#define POLLIN    0x001     // a read would not block: data, a line, a datagram, an event
#define POLLOUT   0x004     // a write would not block
#define POLLERR   0x008     // pipe write end: the read end is closed
#define POLLHUP   0x010     // pipe read end: the write end is closed
#define POLLNVAL  0x020     // fd is not open

// File types in struct stat.
#define T_DIR     1
#define T_FILE    2
#define T_DEVICE  3

// Device majors for mknod().
#define DEV_CONSOLE 1

// POSIX's st_mode: the file type (S_IFMT bits, the same fact as type)
// and permission bits. There are no owners or permission checks: every
// file is readable, writable and executable by all (0777).
#define S_IFMT   0170000
#define S_IFDIR  0040000
#define S_IFCHR  0020000
#define S_IFREG  0100000
#define S_IFIFO  0010000    // never reported (pipes have no inode)
#define S_IFLNK  0120000    // never reported (no symbolic links)
#define S_IFSOCK 0140000    // never reported (sockets have no inode)
#define S_IFBLK  0060000    // never reported (no block device files)
#define S_STAT_PERMS 0777   // the permission bits every file reports

struct stat {
  int dev;                  // file system's disk device
  unsigned int ino;         // inode number
  short type;               // T_DIR, T_FILE or T_DEVICE
  short nlink;              // number of links to the file
  unsigned int st_mode;     // S_IFDIR / S_IFREG / S_IFCHR for type, | S_STAT_PERMS
  unsigned long size;       // size of the file in bytes
};

struct sysinfo {
  unsigned long freepages;  // physical pages on the free list
  unsigned long totalpages; // physical pages the allocator manages
  unsigned int nproc;       // processes not in the UNUSED state
  unsigned int ncpu;        // harts running
  unsigned int hart;        // the hart that ran this call (the process may move on)
  unsigned int pad;
  unsigned long idle_ns;    // time the harts spent idle (nothing to run) since boot, summed:
  unsigned long now_ns;     //   busy time over a run = ncpu * (now_ns delta) - idle_ns delta
  unsigned long lock_parks; // spin-lock waits that parked in wfi since boot, all harts (contention)
};

// Demand paging (SYS_pagestat; kernel/core/pager.c). Pages are 4 KiB.
// Fault latency (a fault on a page in the store: trap to mapped, read-ahead
// included) goes into a log2 histogram: bucket i counts faults that took
// [2^i, 2^(i+1)) microseconds (bucket 0 also < 1 us, the last also more).
#define PAGESTAT_BUCKETS 24
struct pagestat {
  unsigned long store_slots;  // pages the backing store holds; 0: no store, paging off
  unsigned long resident;     // user pages in RAM
  unsigned long paged_out;    // user pages whose only copy is in the store
  unsigned long slots_used;   // store slots in use (paged out, or a clean copy of a resident page)
  unsigned long faults;       // faults that read a page from the store
  unsigned long evictions;    // pages evicted
  unsigned long clean_evictions; // of those, dropped without a write (the store's copy was current)
  unsigned long writebacks;   // pages written to the store
  unsigned long wb_batches;   // store write calls (writebacks / wb_batches = batch size)
  unsigned long ra_issued;    // pages read ahead (with a fault, same store call)
  unsigned long ra_hits;      // read-ahead pages the process then used
  unsigned long io_errors;    // store calls that failed (store unreachable)
  unsigned long oom;          // user page allocations refused: nothing left to evict
  unsigned long lat_count;    // fault latency: count, sum and max in nanoseconds
  unsigned long lat_sum_ns;
  unsigned long lat_max_ns;
  unsigned long lat_hist[PAGESTAT_BUCKETS];
};

#define DIRSIZ 14           // longest file name component, in bytes

// A directory is a file of these records; inum 0 marks a free slot.
struct dirent {
  unsigned short inum;
  char name[DIRSIZ];
};


// ---- RDMA verbs ABI (SYS_rdma_*). ----
// The libibverbs constants the system calls carry, under libibverbs'
// names and values (user/lib/ibverbs/ibverbs.h takes them from here; the kernel's
// rdma/rdma_abi.c asserts that the transport core's values are the same).
#define RDMA_MAX_SGE 4
// Objects of the device, all processes together (ibv_query_device's max_qp,
// max_cq). A QP's or CQ's handle is below its limit, so the user library
// sizes its handle -> object tables from these (kernel/rdma/rdma.h and
// user/lib/ibverbs/ibverbs.c use them).
#define RDMA_MAX_CQ 512      // a CQ per QP
#define RDMA_MAX_QP 512      // 256 connections each way between two guests, and room
#define RDMA_MAX_AH 256      // address handles, all processes together (max_ah)
#define RDMA_MAX_SRQ 32      // shared receive queues, all processes together (max_srq)
// QP types (struct rdma_qp_create's qp_type): libibverbs' enum ibv_qp_type values.
#define RDMA_QPT_RC 2
#define RDMA_QPT_UD 4
// A UD send's remote_qkey with this bit set means "the sending QP's own Q_Key" (IBTA 10.2.5)
#define RDMA_QKEY_CONTROLLED 0x80000000u
// QP1, the General Services Interface QP (IBTA 13.5.1, kernel/rdma/gsi.c):
// its QPN, its well-known Q_Key (a controlled one) and the one size of its
// datagrams (MADs). Its P_Key is the only one, the core's (every frame's
// BTH P_Key is checked against it, rx.c).
#define RDMA_GSI_QPN  1
#define RDMA_GSI_QKEY 0x80010000u
#define RDMA_MAD_LEN  256
// Why a posted WR was refused (SYS_rdma_post_*'s err), libibverbs' errno values.
#define RDMA_EINVAL 22       // bad WR, or the QP's state takes no WRs [QP-STATE-4]
#define RDMA_ENOMEM 12       // the queue is full

enum ibv_mtu {
  IBV_MTU_256 = 1, IBV_MTU_512 = 2, IBV_MTU_1024 = 3, IBV_MTU_2048 = 4, IBV_MTU_4096 = 5
};

enum ibv_port_state {
  IBV_PORT_NOP = 0, IBV_PORT_DOWN = 1, IBV_PORT_INIT = 2, IBV_PORT_ARMED = 3,
  IBV_PORT_ACTIVE = 4, IBV_PORT_ACTIVE_DEFER = 5
};

// MR access and QP remote-access flags.
enum ibv_access_flags {
  IBV_ACCESS_LOCAL_WRITE = 1, IBV_ACCESS_REMOTE_WRITE = 1 << 1, IBV_ACCESS_REMOTE_READ = 1 << 2,
  IBV_ACCESS_REMOTE_ATOMIC = 1 << 3, IBV_ACCESS_MW_BIND = 1 << 4,
};

enum ibv_qp_state {
  IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE,
  IBV_QPS_ERR, IBV_QPS_UNKNOWN
};

// SYS_rdma_modify_qp's mask bits (RDMA_QP_* below extend them).
enum ibv_qp_attr_mask {
  IBV_QP_STATE = 1 << 0,
  IBV_QP_CUR_STATE = 1 << 1,
  IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
  IBV_QP_ACCESS_FLAGS = 1 << 3,
  IBV_QP_PKEY_INDEX = 1 << 4,
  IBV_QP_PORT = 1 << 5,
  IBV_QP_QKEY = 1 << 6,
  IBV_QP_AV = 1 << 7,
  IBV_QP_PATH_MTU = 1 << 8,
  IBV_QP_TIMEOUT = 1 << 9,
  IBV_QP_RETRY_CNT = 1 << 10,
  IBV_QP_RNR_RETRY = 1 << 11,
  IBV_QP_RQ_PSN = 1 << 12,
  IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13,
  IBV_QP_ALT_PATH = 1 << 14,
  IBV_QP_MIN_RNR_TIMER = 1 << 15,
  IBV_QP_SQ_PSN = 1 << 16,
  IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
  IBV_QP_PATH_MIG_STATE = 1 << 18,
  IBV_QP_CAP = 1 << 19,
  IBV_QP_DEST_QPN = 1 << 20,
};

enum ibv_wr_opcode {
  IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
  IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV, IBV_WR_TSO,
};

// IBV_SEND_INLINE is the library's (user/lib/ibverbs/ibverbs.c): the kernel ignores it.
enum ibv_send_flags {
  IBV_SEND_FENCE = 1 << 0, IBV_SEND_SIGNALED = 1 << 1, IBV_SEND_SOLICITED = 1 << 2,
  IBV_SEND_INLINE = 1 << 3, IBV_SEND_IP_CSUM = 1 << 4,
};

enum ibv_wc_status {
  IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_EEC_OP_ERR,
  IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR, IBV_WC_BAD_RESP_ERR,
  IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR,
  IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_LOC_RDD_VIOL_ERR,
  IBV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_ABORT_ERR, IBV_WC_INV_EECN_ERR,
  IBV_WC_INV_EEC_STATE_ERR, IBV_WC_FATAL_ERR, IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_GENERAL_ERR,
};

enum ibv_wc_opcode {
  IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD,
  IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_TSO,
  IBV_WC_RECV = 1 << 7,
  IBV_WC_RECV_RDMA_WITH_IMM,
};

// Only these meanings: a solicited receive is struct rdma_wc's own
// `solicited` field, outside wc_flags.
enum ibv_wc_flags {
  IBV_WC_GRH = 1 << 0, IBV_WC_WITH_IMM = 1 << 1, IBV_WC_IP_CSUM_OK = 1 << 2, IBV_WC_WITH_INV = 1 << 3,
};

// struct rdma_async_event's event_type.
enum ibv_event_type {
  IBV_EVENT_CQ_ERR, IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,
  IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED, IBV_EVENT_PATH_MIG, IBV_EVENT_PATH_MIG_ERR,
  IBV_EVENT_DEVICE_FATAL, IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR, IBV_EVENT_LID_CHANGE,
  IBV_EVENT_PKEY_CHANGE, IBV_EVENT_SM_CHANGE, IBV_EVENT_SRQ_ERR, IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_EVENT_QP_LAST_WQE_REACHED, IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE,
  IBV_EVENT_WQ_FATAL,
};

struct rdma_device_info {
  unsigned long long node_guid, max_mr_size, page_size_cap;
  unsigned int vendor_id, vendor_part_id, hw_ver;
  int max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
  int max_qp_rd_atom, max_qp_init_rd_atom, max_res_rd_atom;   // READs and atomics alike
  int phys_port_cnt;
  int max_srq, max_srq_wr, max_srq_sge;
  int atomic_cap;            // enum ibv_atomic_cap
};

// ibv_query_device's atomic_cap.
enum ibv_atomic_cap { IBV_ATOMIC_NONE, IBV_ATOMIC_HCA, IBV_ATOMIC_GLOB };

struct rdma_port_info {
  int state;                 // enum ibv_port_state
  int max_mtu, active_mtu;   // enum ibv_mtu
  int gid_tbl_len;
  unsigned int max_msg_sz;
  unsigned int ipv4;         // host order
  unsigned char mac[6];
  unsigned char gid[16];     // GID index 0: IPv4-mapped ::ffff:a.b.c.d
};

struct rdma_mr_keys { unsigned int lkey, rkey; };

// Work requests and completions have the transport core's layout (rct_sge,
// rct_send_wr, rct_recv_wr, rct_wc; rdma/rdma_abi.c asserts it field by
// field), so the kernel copies them in and out as they are.
// libibverbs' own SGE: a WR's sg_list points at the caller's array of them.
struct ibv_sge {
  unsigned long long addr;
  unsigned int length;
  unsigned int lkey;
};

struct rdma_send_wr {
  unsigned long long wr_id;
  unsigned int opcode;       // enum ibv_wr_opcode
  unsigned int send_flags;   // enum ibv_send_flags
  unsigned long long sg_list;   // address of num_sge struct ibv_sge
  int num_sge;
  unsigned int imm_data;     // host order (ibv_send_wr's is network order)
  union {
    struct {                 // RC: RDMA WRITE / READ's target
      unsigned long long remote_addr;
      unsigned int rkey, pad;
    };
    struct {                 // UD (libibverbs' wr.ud): where the datagram goes
      int ud_ah;             // an address handle of the caller's (SYS_rdma_create_ah)
      unsigned int ud_remote_qpn, ud_remote_qkey, ud_pad;
    };
  };
  // Atomics (IBV_WR_ATOMIC_*, remote_addr/rkey above; one 8-byte SGE gets
  // the original value): host-order integers, as libibverbs' wr.atomic.
  unsigned long long compare_add;  // CMP_AND_SWP's compare, FETCH_AND_ADD's add
  unsigned long long swap;         // CMP_AND_SWP's swap
};

struct rdma_recv_wr {
  unsigned long long wr_id;
  unsigned long long sg_list;   // address of num_sge struct ibv_sge
  int num_sge;
  unsigned int pad;
};

struct rdma_wc {
  unsigned long long wr_id;
  unsigned int status;       // enum ibv_wc_status
  unsigned int opcode;       // enum ibv_wc_opcode
  unsigned int byte_len;
  unsigned int imm_data;     // host order (ibv_wc's is network order)
  unsigned int wc_flags;     // enum ibv_wc_flags
  unsigned int qp_num, src_qp, vendor_err;
  unsigned char solicited;   // a receive whose message asked for an event
  unsigned char pad[7];
};

// A CQ's ring in the process's own memory (SYS_rdma_map_cq; ibv_create_cq
// maps every CQ). The kernel moves each completion into ring[prod % cqe],
// then advances prod; ibv_poll_cq reads ring[cons % cqe] while cons !=
// prod and advances cons, with no system call. The kernel writes the
// pages it pinned at map time (a fork's child has its own copy, which the
// kernel never writes) and trusts none of it: it reads cons once per move
// and moves nothing while prod - cons is not in [0, cqe], so a garbage
// cons only lets the process's own CQ overrun. held: completions the
// kernel still holds because the ring was full (the library asks for them
// with SYS_rdma_poll_cq, which then moves them and returns 0). error: the
// CQ overran; polls fail from then on.
struct rdma_cq_ring {
  volatile unsigned int prod, held, error;   // the kernel's
  unsigned int pad0[13];
  volatile unsigned int cons;                // the process's
  unsigned int pad1[15];
  struct rdma_wc wc[];                       // cqe entries
};
#define RDMA_CQ_RING_BYTES(cqe) (sizeof(struct rdma_cq_ring) + (unsigned long)(cqe) * sizeof(struct rdma_wc))

// A QP's send or receive ring in the process's own memory (SYS_rdma_map_qp;
// ibv_create_qp maps both, ibv_post_send / ibv_post_recv write them). The
// library writes each WR with its SGEs inline into entry[prod % size]
// (size: the queue's granted max_send_wr / max_recv_wr; the entry's
// wr.sg_list is ignored), fences, advances prod and rings the doorbell
// (SYS_rdma_doorbell): one system call for the whole list. The kernel
// reads prod once per intake; prod - cons above size is garbage: nothing
// is taken, the QP goes to ERR and the process gets IBV_EVENT_QP_FATAL (as
// a hardware QP with a malformed WQE). Otherwise it copies each entry into
// kernel memory, and only then checks and posts the copy as
// SYS_rdma_post_send / post_recv would. The doorbell takes the ring up to
// prod (cons == prod after it): the first entry it refuses ends it, err
// says why (RDMA_EINVAL, RDMA_ENOMEM) and err_at is its index; the entries
// from it on are dropped, not posted (err is 0 when none was refused).
//
// Doorbells elided (send rings of RC QPs): while armed is 1 the kernel
// will take the ring in again without a doorbell, at a pass of its engine
// that is bound to come (the QP is in RTS with WRs in its send queue, so
// an ACK or a timer of its own is due). The library then writes the
// entries, fences, advances prod, fences and reads armed: 1 means posted,
// no system call. The kernel disarms the same way round (armed = 0,
// fence, prod read again), so an entry is either seen by the kernel or
// the library rings the doorbell. retired counts, in ring indices, the
// entries that have left the send queue (completed or flushed): entries
// up to retired + size fit in it, which the library checks before it
// skips the doorbell (the kernel writes retired before it moves the
// completions of the same pass into the CQ's ring). An entry the engine
// takes without a doorbell and refuses (only one the library did not
// write: it checks everything else first) ends the QP as garbage does;
// one that does not fit waits in the ring. The kernel reads the pages it
// pinned at map time (a fork's child has its own copy, which the kernel
// never reads).
struct rdma_wq_ring {
  volatile unsigned int cons, err, err_at, retired, armed;   // the kernel's
  unsigned int pad0[11];
  volatile unsigned int prod;                // the process's
  unsigned int pad1[15];
};
#define RDMA_WQ_SEND 0       // SYS_rdma_map_qp / SYS_rdma_doorbell's queue: the send queue
#define RDMA_WQ_RECV 1       // ... the receive queue (an SRQ's receives stay system calls)
struct rdma_sq_entry { struct rdma_send_wr wr; struct ibv_sge sge[RDMA_MAX_SGE]; };
struct rdma_rq_entry { struct rdma_recv_wr wr; struct ibv_sge sge[RDMA_MAX_SGE]; };
struct rdma_sq_ring { struct rdma_wq_ring h; struct rdma_sq_entry e[]; };   // size entries
struct rdma_rq_ring { struct rdma_wq_ring h; struct rdma_rq_entry e[]; };
#define RDMA_WQ_RING_BYTES(which, size) (sizeof(struct rdma_wq_ring) + (unsigned long)(size) * \
  ((which) == RDMA_WQ_SEND ? sizeof(struct rdma_sq_entry) : sizeof(struct rdma_rq_entry)))

struct rdma_qp_create {
  int pd, send_cq, recv_cq, sq_sig_all;
  int qp_type;               // RDMA_QPT_RC or RDMA_QPT_UD (0: RC)
  unsigned int max_send_wr, max_recv_wr, max_send_sge, max_recv_sge; // in: wanted, out: granted
  unsigned int qp_num;       // out
  int srq;                   // 1 + an SRQ handle of the caller's, in the QP's PD; 0: none
                             // (then max_recv_wr and max_recv_sge are ignored, granted 0)
};

// ibv_modify_srq's mask (SYS_rdma_modify_srq), libibverbs' values.
enum ibv_srq_attr_mask { IBV_SRQ_MAX_WR = 1 << 0, IBV_SRQ_LIMIT = 1 << 1 };

// libibverbs' struct ibv_srq_attr (SYS_rdma_modify_srq, SYS_rdma_query_srq).
struct rdma_srq_attr {
  unsigned int max_wr, max_sge, srq_limit;
};

struct rdma_srq_create {
  int pd;
  unsigned int max_wr, max_sge;   // in: wanted (0 = 1); out: granted
};

// Extension mask bits next to the IBV_QP_* bits of SYS_rdma_modify_qp.
#define RDMA_QP_SR            (1u << 28)  // sr_enable
#define RDMA_QP_ADAPTIVE_RTO  (1u << 29)  // adaptive_rto, min_rto_ns
#define RDMA_QP_MAX_INFLIGHT  (1u << 30)  // max_inflight
#define RDMA_QP_ROCE_V1       (1u << 27)  // with IBV_QP_AV: RoCE v1 (EtherType 0x8915 + GRH)

struct rdma_qp_attr {
  unsigned int qp_state, cur_qp_state, path_mtu, qp_access_flags;
  unsigned int rq_psn, sq_psn, dest_qp_num;
  unsigned int timeout, retry_cnt, rnr_retry, min_rnr_timer;
  unsigned int max_rd_atomic, max_dest_rd_atomic;
  unsigned int dipv4;        // peer IPv4, host order (from the AV's GID)
  unsigned char dmac[6];     // peer MAC; all zero = resolve in the kernel
  unsigned char hop_limit, traffic_class;
  unsigned int sr_enable, adaptive_rto, max_inflight;
  unsigned long long min_rto_ns;
  unsigned int max_send_wr, max_recv_wr, max_send_sge, max_recv_sge; // query only
  unsigned int pkey_index, port_num;   // IBV_QP_PKEY_INDEX (0), IBV_QP_PORT (1)
  unsigned int qkey;                   // IBV_QP_QKEY: a UD QP's Q_Key
};

// An address handle (SYS_rdma_create_ah): where a UD datagram goes.
struct rdma_ah_attr {
  int pd;
  unsigned int dipv4;        // host order (from the IPv4-mapped destination GID)
  unsigned char dmac[6];     // all zero = resolve in the kernel (ARP)
  unsigned char hop_limit, traffic_class;   // hop_limit 0 = 64
  unsigned int port_num;     // 1
};

struct rdma_async_event {
  int event_type;            // enum ibv_event_type
  int handle;                // the cq or qp handle it concerns
  unsigned long long cookie; // the cq's cookie for CQ events
};

// Device-wide counters: frames dropped before a QP was found, by reason
// (the core's, one counter per dropped frame), the NIC seam's, and async
// events lost to a full queue. Every field is a counter, in this order
// (user/lib/ibverbs/rdma_util.c names them for rdmastat).
struct rdma_dev_stats {
  unsigned long long rx_frames;        // frames handed to the transport core
  unsigned long long rx_not_roce, rx_truncated, rx_bad_header, rx_icrc_err;
  unsigned long long rx_bad_opcode, rx_unknown_qp;
  unsigned long long tx_frames;        // frames the core sent
  unsigned long long nic_rx_frames;    // RoCE frames from the NIC
  unsigned long long nic_rx_bad;       // dropped before the core (IPv4 options, no headroom)
  unsigned long long nic_tx_frames;    // frames given to the NIC
  unsigned long long nic_tx_full;      // frames lost to a full NIC ring
  unsigned long long tx_no_route;      // frames for another host with no NIC
  unsigned long long tx_too_big;       // loopback frames larger than the loopback buffer
  unsigned long long async_dropped;    // async events dropped from a full per-process queue
  // Objects alive now, all processes (a soak compares them before and after: make soak).
  unsigned long long live_pds, live_mrs, live_cqs, live_qps, live_chans;
  unsigned long long pool_free_pages;  // ring pool pages free (kernel/rdma/rdma_pool.c)
  unsigned long long live_ahs;         // address handles alive now, all processes
  // QP1, the GSI QP (kernel/rdma/gsi.c): MADs received and handed to the CM,
  // sent; received and dropped (bad length, no IPv4 source, error
  // completion), dropped for a wrong Q_Key by the UD core [UD-QKEY-1];
  // sends dropped (no ARP answer by the deadline, queue full, refused),
  // sends that waited for ARP.
  unsigned long long gsi_rx_mads, gsi_tx_mads, gsi_rx_dropped, gsi_rx_bad_qkey;
  unsigned long long gsi_tx_dropped, gsi_arp_waits;
  // The IB CM (kernel/rdma/cma.c, the agent kernel/cm/ibcm.c): MADs it
  // took and sent, retransmitted, dropped (malformed, wrong version, unknown
  // attribute or connection, stale, queue full), duplicates answered, REQs
  // rejected for no listener, rdma_cm events lost to a full pool, ids alive.
  unsigned long long cm_rx, cm_tx, cm_retransmits, cm_dropped, cm_duplicates;
  unsigned long long cm_rej_no_listener, cm_events_dropped, cm_live_ids;
  unsigned long long live_srqs;        // shared receive queues alive now, all processes
};

struct rdma_qp_stats {
  int handle, owner_pid;     // handle -1: not this process's QP
  unsigned int qp_num, dest_qp_num, state, sr;
  unsigned int req_state, resp_state, comp_state;
  unsigned long long tx_frames, tx_bytes, rx_frames, rx_bytes;
  unsigned long long tx_payload_bytes, rx_payload_bytes;
  unsigned long long tx_retransmits, timeouts, rnr_timeouts;
  unsigned long long tx_ack, rx_ack, tx_nak, rx_nak, tx_rnr_nak, rx_rnr_nak;
  unsigned long long rx_dup, rx_out_of_seq, rx_out_of_window, rx_dropped;
  unsigned long long completions, error_completions, flushed, cq_overflow;
  unsigned long long early_probes;   // [REQ-TMO-8]
  unsigned long long window_cuts;    // go-back-N loss window halvings [REQ-WIN-5]
  unsigned long long late_probes;    // early probes that fired late and waited once [REQ-TMO-11]
  unsigned int max_inflight;        // the request window in packets ([REQ-WIN-1]; 0 = the kernel's default)
  unsigned int loss_window;         // go-back-N loss window now ([REQ-WIN-5]; 0 = none below max_inflight)
  unsigned int qp_type;             // RDMA_QPT_RC or RDMA_QPT_UD (UD: sr and the three role states 0)
};


// ---- The kernel rdma_cm's ABI (SYS_ucma_*) ----
// librdmacm's event types and port spaces, with its values.
enum rdma_cm_event_type {
  RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED,
  RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE,
  RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED,
  RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_DEVICE_REMOVAL,
  RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE,
  RDMA_CM_EVENT_TIMEWAIT_EXIT,
};
enum rdma_port_space {
  RDMA_PS_IPOIB = 0x0002, RDMA_PS_TCP = 0x0106, RDMA_PS_UDP = 0x0111, RDMA_PS_IB = 0x013F,
};
// The Q_Key of rdma_cm's RDMA_PS_UDP ids: their UD QPs get it (INIT) and the
// SIDR_REP announces it (Linux's value; tests/vectors/cm/udaddy.pcap).
#define RDMA_UDP_QKEY 0x01234567u
// xv6's capability bits, carried in reserved fields of the CM's REQ and REP
// (proto-spec ibcm.md [IBCM-XV6-1]) and used only when both sides set them.
#define RDMA_XV6_CAP_SR 1u       // bit 0: selective repeat (proto-spec sr.md)
#define UCMA_PRIVATE_MAX 196     // the most private data an event carries (a REP's room)
// Connection parameters: given to connect / accept (our QP and wishes), and
// reported in CONNECT_REQUEST / CONNECT_RESPONSE / ESTABLISHED (the peer's).
struct ucma_conn_param {
  unsigned int qp_num;
  unsigned char responder_resources, initiator_depth, retry_count, rnr_retry_count;
  unsigned char srq, private_data_len, ack_timeout, pad;
  unsigned int xv6_caps;      // project options offered (RDMA_XV6_CAP_*); reported: both sides'
  unsigned int qkey;          // RDMA_PS_UDP, reported: the peer's Q_Key (SIDR_REP), else 0
  unsigned char private_data[UCMA_PRIVATE_MAX];
};
struct ucma_event {
  int event;                  // enum rdma_cm_event_type
  int status;                 // 0; REJECTED: the REJ reason; errors: a negated errno
  int id;                     // the id (CONNECT_REQUEST: the new one)
  int listen_id;              // CONNECT_REQUEST: the listening id, else -1
  unsigned long long cookie;  // the id's cookie (a new id has the listener's)
  unsigned int src_ip, dst_ip;          // the id's addresses now
  unsigned short src_port, dst_port;
  struct ucma_conn_param param;
};

// Network ABI (see SYS_socket..SYS_arpwait).
#define SOCK_UDP  1
#define SOCK_ICMP 2
struct net_addr { unsigned int ip; unsigned short port; unsigned short pad; };
struct net_info {
  unsigned int ip, netmask;
  unsigned char mac[6];
  unsigned char present, link_up;
};
#define NET_MAX_UDP_PAYLOAD 8972   // 9000-byte MTU - IPv4 - UDP headers
// The RoCE frame ceiling's port: a datagram to it is a RoCEv2 frame body
// (BTH, payload, ICRC). netblast computes each copy's ICRC before sending
// it; the receiving kernel, which holds the port, verifies the ICRC, copies
// the payload into a buffer and counts roce_sink_ok / roce_sink_bad_icrc.
#define NET_ROCE_SINK_PORT 9003

// The kernel's client of a memory node (kernel/rmem/rmem_client.c; the tool
// user/bin/rmemctl). SYS_rmemctl(op, arg...): 0, or a negated errno.
#define SYS_rmemctl 125
// SYS_rdma_map_cq(cq, struct rdma_cq_ring *ring): ring page-aligned, zeroed,
// RDMA_CQ_RING_BYTES(cqe) long; 0, or -1 (bad CQ, already mapped, bad memory).
#define SYS_rdma_map_cq 126
// SYS_syscount(): the system calls the calling process made, this one
// included (tests count the calls a verb makes).
#define SYS_syscount 127
// SYS_rdma_map_qp(qp, RDMA_WQ_*, struct rdma_wq_ring *ring): ring
// page-aligned, zeroed, RDMA_WQ_RING_BYTES(which, granted max_*_wr) long;
// 0, or -1 (bad QP, a queue of size 0, already mapped, bad memory).
#define SYS_rdma_map_qp 128
// SYS_rdma_doorbell(qp, RDMA_WQ_*): posts the mapped ring's new entries
// (struct rdma_wq_ring above): how many were posted, or -1 (bad QP, no
// ring, garbage prod).
#define SYS_rdma_doorbell 129
#define RMEMCTL_STATUS  0   // (struct rmemctl_status *out)
#define RMEMCTL_CONNECT 1   // (ip, port): -EBUSY if a node is configured already
#define RMEMCTL_TEST    2   // (struct rmemctl_test *t): the client's self-test
#define RMEMCTL_LAT     3   // (struct rmemctl_lat *out, reset): io() read latency since the last reset
struct rmemctl_status {
  unsigned int node_ip;               // host order; 0: no node configured
  unsigned short node_port;
  unsigned char configured, connected;
  unsigned char sr;                   // the connection runs selective repeat
  unsigned char pad[3];
  unsigned int regions;               // remote regions holding the slots
  unsigned long long nslots;          // page-sized slots the store offers (0: not yet known)
  unsigned long long bytes_read, bytes_written;
  unsigned long long io_calls, io_failed;   // io() calls; those that returned -1
  unsigned long long pages_read, pages_written;
  unsigned long long retries;         // io() calls that waited for a new connection
  unsigned long long connects, reconnects;   // connections made; made after a lost one
  unsigned long long connect_failures;       // attempts that failed
  unsigned long long lost_reads;      // reads refused: the slot's content went with a connection
};
// The latency of io() read calls (a page fault's wait for the store, its
// read-ahead pages included), from a histogram of RMEMCTL_LAT_STEP_US steps.
#define RMEMCTL_LAT_STEP_US 10
struct rmemctl_lat {
  unsigned long long calls, pages;    // read calls and their pages
  unsigned int median_us, p99_us;     // upper bounds of their steps
  unsigned int max_us;
  unsigned int pad;
  unsigned long long total_us;        // the read calls' time, summed
  unsigned long long reg_us;          // of all io() calls: registering and deregistering their pages
};
struct rmemctl_test {
  unsigned int pages;                 // in: pages to move each way (1..128)
  unsigned int first_slot;            // in: slots first_slot .. + pages - 1 (mod the store's slots)
  unsigned int mismatches;            // bytes read back wrong
  unsigned int read_only;             // in: 1: only read the slots (nothing compared)
  int write_rc, read_rc;              // io()'s results
  unsigned long long write_ns, read_ns;
};

#endif
