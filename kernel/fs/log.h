// log.h: the file system's write-ahead log (log.c). Every system call
// that modifies the disk brackets its changes with fs_tx_begin() and
// fs_tx_end(); inside, it marks each modified buffer with log_write(b)
// instead of writing it. When the last concurrent transaction ends, the
// log commits: the blocks go to the log area, the header makes them
// durable in one block write, then they are installed at home. After a
// crash, mount replays a committed log, so an operation is all or nothing.
// A transaction may log at most MAX_OP_BLOCKS distinct blocks.
#ifndef LOG_H
#define LOG_H
struct buf;
struct fs_super;
void log_init(int dev, struct fs_super *sb);   // replays a committed log
void fs_tx_begin(void);
void fs_tx_end(void);
void log_write(struct buf *b);
#endif
