// e1000_regs.h: the Intel 82540EM (8086:100e) registers and descriptor
// formats the driver uses (offsets from BAR0; values from the 8254x
// software developer's manual).
#ifndef E1000_REGS_H
#define E1000_REGS_H

#define E1000_VENDOR 0x8086
#define E1000_DEVICE 0x100e

// Registers (byte offsets into BAR0).
#define E1000_CTRL    0x00000
#define E1000_STATUS  0x00008
#define E1000_EERD    0x00014
#define E1000_ICR     0x000c0   // read clears
#define E1000_ITR     0x000c4   // minimum interrupt interval, 256 ns units
#define E1000_IMS     0x000d0
#define E1000_IMC     0x000d8
#define E1000_RCTL    0x00100
#define E1000_TCTL    0x00400
#define E1000_TIPG    0x00410
#define E1000_RDBAL   0x02800
#define E1000_RDBAH   0x02804
#define E1000_RDLEN   0x02808
#define E1000_RDH     0x02810
#define E1000_RDT     0x02818
#define E1000_RDTR    0x02820   // receive delay timer, 1.024 us units
#define E1000_RADV    0x0282c   // receive absolute delay, 1.024 us units
#define E1000_TDBAL   0x03800
#define E1000_TDBAH   0x03804
#define E1000_TDLEN   0x03808
#define E1000_TDH     0x03810
#define E1000_TDT     0x03818
#define E1000_TIDV    0x03820
#define E1000_TADV    0x0382c
#define E1000_MTA     0x05200   // 128 words of multicast table
#define E1000_RAL0    0x05400
#define E1000_RAH0    0x05404
#define E1000_MPC     0x04010   // missed packets (no descriptors)

// CTRL
#define CTRL_SLU      (1u << 6)     // set link up
#define CTRL_RST      (1u << 26)
// STATUS
#define STATUS_LU     (1u << 1)
// EERD (82540EM layout)
#define EERD_START    (1u << 0)
#define EERD_DONE     (1u << 4)
#define EERD_ADDR_SHIFT 8
#define EERD_DATA_SHIFT 16
// Interrupt causes (ICR / IMS / IMC)
#define ICR_TXDW      (1u << 0)     // a descriptor with RS was written back
#define ICR_LSC       (1u << 2)     // link status change
#define ICR_RXDMT0    (1u << 4)     // free RX descriptors below threshold
#define ICR_RXO       (1u << 6)     // receiver overrun
#define ICR_RXT0      (1u << 7)     // receive timer: frames are waiting
// RCTL
#define RCTL_EN       (1u << 1)
#define RCTL_UPE      (1u << 3)
#define RCTL_MPE      (1u << 4)
#define RCTL_LPE      (1u << 5)     // long packets (jumbo frames)
#define RCTL_BAM      (1u << 15)    // accept broadcast
#define RCTL_BSIZE_4096 (3u << 16)  // with BSEX: 4096-byte buffers
#define RCTL_BSEX     (1u << 25)
#define RCTL_SECRC    (1u << 26)    // strip the Ethernet CRC
// TCTL
#define TCTL_EN       (1u << 1)
#define TCTL_PSP      (1u << 3)     // pad short packets
#define TCTL_CT_SHIFT 4
#define TCTL_COLD_SHIFT 12
// RAH
#define RAH_AV        (1u << 31)

// Legacy transmit descriptor.
struct e1000_tx_desc {
  uint64 addr;
  uint16 length;
  uint8  cso;
  uint8  cmd;
  uint8  status;
  uint8  css;
  uint16 special;
};
#define TXD_CMD_EOP   0x01
#define TXD_CMD_IFCS  0x02          // insert FCS
#define TXD_CMD_RS    0x08          // report status (sets DD)
#define TXD_STAT_DD   0x01

// Receive descriptor.
struct e1000_rx_desc {
  uint64 addr;
  uint16 length;
  uint16 csum;
  uint8  status;
  uint8  errors;
  uint16 special;
};
#define RXD_STAT_DD   0x01
#define RXD_STAT_EOP  0x02

#endif
