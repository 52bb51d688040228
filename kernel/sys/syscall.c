// syscall.c: the system call table, indexed by SYS_* number, and its
// dispatcher (boot hands it to trap.c). Handlers read their arguments
// with proc/args.h.
// Unknown numbers return -1 and print a console message.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/vm.h"
#include "sys/syscall.h"
#include "lib/uapi.h"

// RDMA verbs (sysrdma.c over kernel/rdma/), numbers 60..91 in uapi.h.
#define RDMA_HANDLERS(X) \
  X(rdma_query_device) X(rdma_query_port) X(rdma_alloc_pd) X(rdma_dealloc_pd) \
  X(rdma_reg_mr) X(rdma_dereg_mr) X(rdma_create_chan) X(rdma_destroy_chan) \
  X(rdma_create_cq) X(rdma_destroy_cq) X(rdma_poll_cq) X(rdma_req_notify) \
  X(rdma_get_cq_event) X(rdma_create_qp) X(rdma_modify_qp) X(rdma_query_qp) \
  X(rdma_destroy_qp) X(rdma_post_send) X(rdma_post_recv) X(rdma_get_async) \
  X(rdma_qp_stats) X(rdma_set_neigh) X(rdma_wait_write) \
  X(rdma_wait_cq) X(rdma_dev_stats) X(rdma_create_ah) X(rdma_destroy_ah) \
  X(rdma_create_srq) X(rdma_modify_srq) X(rdma_query_srq) X(rdma_destroy_srq) X(rdma_post_srq_recv) \
  X(rdma_map_cq) X(rdma_map_qp) X(rdma_doorbell)

#define HANDLERS(X) \
  X(fork) X(exit) X(wait) X(pipe) X(read) X(write) X(close) X(kill) \
  X(exec) X(open) X(mknod) X(unlink) X(fstat) X(link) X(mkdir) X(chdir) \
  X(dup) X(getpid) X(sbrk) X(sleep) X(uptime) X(kclock_ns) X(halt) X(sysinfo) X(timebase) X(getrandom) \
  X(poll) X(fcntl) X(pagestat) X(syscount) \
  RDMA_HANDLERS(X)

#define DECLARE(name) int64 sys_##name(void);
HANDLERS(DECLARE)

// Network stack (sysnet.c; sendzc and netblast: sysbench.c).
#define NET_HANDLERS(X) \
  X(socket) X(bind) X(sendto) X(recvfrom) X(sockclose) X(netstat) X(netinfo) X(arpwait) \
  X(sendzc) X(netblast)
NET_HANDLERS(DECLARE)

// The kernel rdma_cm (sysucma.c).
#define UCMA_HANDLERS(X) \
  X(ucma_create_chan) X(ucma_create_id) X(ucma_destroy_id) X(ucma_bind) X(ucma_resolve_addr) \
  X(ucma_resolve_route) X(ucma_listen) X(ucma_connect) X(ucma_accept) X(ucma_reject) \
  X(ucma_disconnect) X(ucma_init_qp_attr) X(ucma_get_event) X(ucma_migrate_id) X(ucma_established)
UCMA_HANDLERS(DECLARE)

// The kernel's client of a memory node (sysrmem.c).
#define RMEM_HANDLERS(X) X(rmemctl)
RMEM_HANDLERS(DECLARE)

struct syscall_entry { const char *name; int64 (*fn)(void); };
#define ENTRY(name) [SYS_##name] = { #name, sys_##name },
static const struct syscall_entry syscall_table[] = { HANDLERS(ENTRY) NET_HANDLERS(ENTRY) UCMA_HANDLERS(ENTRY)
                                                     RMEM_HANDLERS(ENTRY) };

void syscall_dispatch(void) {
  struct proc *p = current();
  uint64 num = p->tf->regs[REG_A7];
  p->nsyscalls++;
  if (num < ARRAY_LEN(syscall_table) && syscall_table[num].fn) {
    p->tf->regs[REG_A0] = syscall_table[num].fn();
  } else {
    kprintf("pid %d (%s): unknown system call %d\n", p->pid, p->name, (int)num);
    p->tf->regs[REG_A0] = -1;
  }
}
