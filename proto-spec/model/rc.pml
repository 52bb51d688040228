/*
 * rc.pml: Promela model of the xv6-rdma RC transport (proto-spec/), one
 * requester and one responder QP over a network that loses, duplicates and
 * reorders packets (each a bounded number of times).
 *
 * Modes (preprocessor macros, pass to spin with -D):
 *   (default)        go-back-N, the IBTA recovery ([REQ-GBN-1], [REQ-GBN-2])
 *   SR               selective repeat, IRN-style (sr.md)
 *   LIVENESS         adds the LTL property "every WR eventually completes"
 *   BROKEN_DUPWRITE  negative test: the responder executes a duplicate WRITE
 *                    again, violating [RESP-DUP-1]; verification MUST fail.
 *   BROKEN_SR_READ_EARLY  negative test (with SR): the responder answers a
 *                    READ that arrives ahead of epsn, violating [SR-RESP-6];
 *                    the READ can return data older than the WRITE before it.
 *   MAXLOSS, MAXDUP, MAXREORD  impairment budgets (default 1 each)
 *   MAXSPUR          premature retransmission timeouts (default 1)
 *
 * Workload: three WRs posted on the requester's send queue, in order:
 *   WR0  RDMA WRITE of 2 packets (FIRST, LAST)        PSN index 0, 1
 *   WR1  RDMA READ of 2 response packets (FIRST, LAST) PSN index 2, 3
 *        reading back the bytes WR0 wrote (so a READ that overtakes the
 *        WRITE returns wrong data, [SR-RESP-6], [RESP-PSN-2]); a WRITE
 *        precedes it, so its SRXH AFTER_READS is 0 ([SR-WIRE-9]) and it
 *        never runs ahead: the run-ahead of a READ behind READs only is
 *        not modelled (tests/unit/test_sr.c covers it)
 *   WR2  SEND ONLY, whose receive is posted by an "application" process at
 *        an arbitrary time, so RNR NAKs happen ([RESP-RECV-2], [REQ-RNR-1])
 * Wire PSNs are (START + index) mod PMOD with PMOD = 8 and START = 6, so the
 * PSN wraps inside the workload ([PSN-ARITH-1], [PSN-ARITH-2]). The requester
 * keeps absolute indices for its own bookkeeping; every PSN that crosses the
 * wire is modular and is interpreted only through psn_diff ([PSN-ARITH-3]).
 * The responder keeps only modular state.
 *
 * Abstractions: payload is one byte per packet (the data value); path MTU is
 * one "unit"; the retransmission timer is Promela's timeout (it fires when
 * nothing else can move) plus up to MAXSPUR premature expiries while packets
 * are outstanding; the RNR timer is an
 * action the requester may take at any time while it waits; retry_cnt and
 * rnr_retry are infinite (7); MSN, ICRC, keys and counters are not modelled.
 *
 * Properties (see proto-spec/model/README.md):
 *  - assertions: delivered data equals what was sent, in order, exactly once
 *    ([REQ-CMPL-6], [RESP-DUP-1], [SR-RESP-3], [SR-RESP-4]); a WR completes
 *    only after the responder executed it, in posting order ([REQ-CMPL-1],
 *    [REQ-CMPL-2]); READ data equals the memory written before it
 *    ([RESP-READ-1], [REQ-READ-1]);
 *  - no invalid end state;
 *  - LIVENESS: <> all_done under weak fairness (pan -a -f).
 */

#define PMOD   8         /* PSN modulus (24 bits in reality, [PSN-ARITH-1]) */
#define HALF   4         /* PMOD / 2: psn_diff range is [-HALF, HALF) */
#define START  6         /* sq_psn = rq_psn, just below the wrap */
#define WIN    3         /* MAX_OUTSTANDING_PSN / SR_WINDOW, < HALF ([PSN-WIN-1]) */
#define NPSN   5         /* PSN indices used by the workload */
#define NWR    3
#define CAPR   3         /* requester -> responder queue */
#define CAPQ   4         /* responder -> requester queue */

#ifndef MAXLOSS
#define MAXLOSS 1
#endif
#ifndef MAXDUP
#define MAXDUP 1
#endif
#ifndef MAXREORD
#define MAXREORD 1
#endif
#ifndef MAXSPUR
#define MAXSPUR 1        /* premature (spurious) retransmission timeouts */
#endif

#define D0 1             /* WRITE FIRST payload */
#define D1 2             /* WRITE LAST payload */
#define D2 3             /* SEND payload */

#define P(i)  ((START + (i)) % PMOD)

mtype = { WFIRST, WLAST, READREQ, SENDONLY,      /* requests */
          ACK, NAKSEQ, RNR, RRESP, SACK };       /* responses */

/* requests: opcode, PSN, data (READ: response count), AckReq */
chan toR = [CAPR] of { mtype, byte, byte, bit };
/* responses: kind, PSN, data (READ response) or bitmap (SACK) */
chan toQ = [CAPQ] of { mtype, byte, byte };

/* one delay slot per direction: a packet put there is overtaken by later ones */
bool  slR_full; mtype slR_op; byte slR_psn; byte slR_x; bit slR_a;
bool  slQ_full; mtype slQ_k;  byte slQ_psn; byte slQ_x;

byte losses, dups, reords;     /* impairment budgets used so far (both directions) */
byte spur;                     /* premature timeouts used so far */

/* responder memory and delivery, global so the requester's asserts can see them */
byte mem[2];                   /* WRITE target, READ source */
byte rbufS;                    /* the receive buffer of the SEND */
bool posted;                   /* the receive WQE for the SEND is posted */
byte rcv_done;                 /* receive completions produced */
byte dlv;                      /* data packets delivered in order so far */
byte placed[4];                /* ghost: placements per data value (index = value) */
bool all_done;                     /* requester finished: every WR completed */

/* [PSN-ARITH-2] signed modular distance a - b in [-HALF, HALF) */
inline psn_diff(res, a, b) {
  res = (a + PMOD - b) % PMOD;
  if
  :: res >= HALF -> res = res - PMOD
  :: else
  fi
}

/* the network: deliver, lose, duplicate or delay (reorder) one packet */
inline net_toR(o, p, x, a) {
  if
  :: nfull(toR) -> toR!o, p, x, a
  :: full(toR) -> skip                       /* queue overflow is a loss */
  :: losses < MAXLOSS -> losses++
  :: dups < MAXDUP && len(toR) < CAPR - 1 -> dups++; toR!o, p, x, a; toR!o, p, x, a
  :: reords < MAXREORD && !slR_full ->
       reords++; slR_full = 1; slR_op = o; slR_psn = p; slR_x = x; slR_a = a
  fi
}

inline net_toQ(k, p, x) {
  if
  :: nfull(toQ) -> toQ!k, p, x
  :: full(toQ) -> skip
  :: losses < MAXLOSS -> losses++
  :: dups < MAXDUP && len(toQ) < CAPQ - 1 -> dups++; toQ!k, p, x; toQ!k, p, x
  :: reords < MAXREORD && !slQ_full ->
       reords++; slQ_full = 1; slQ_k = k; slQ_psn = p; slQ_x = x
  fi
}

/* ---------------------------------------------------------------- responder */

/* in-order delivery of one data packet: the stream must be D0, D1, D2, each
 * exactly once ([RESP-PSN-2], [RESP-DUP-1], [SR-RESP-4]) */
inline deliver(x) {
  assert(dlv < 3);
  assert((dlv == 0 && x == D0) || (dlv == 1 && x == D1) || (dlv == 2 && x == D2));
  dlv++
}

#ifdef SR
/* [SR-RESP-4]: move epsn over received PSNs, completing messages in order;
 * [SR-RESP-5]: acknowledge after AckReq or a jump over packets placed earlier
 * (uses the responder's locals) */
inline sr_advance() {
  adv = 0;
  do
  :: bm & 1 ->
     deliver(sx[0]);
     if :: sk[0] == SENDONLY -> rcv_done++ :: else fi;
     epsn = (epsn + 1) % PMOD; adv++;
     bm = bm >> 1; sk[0] = sk[1]; sx[0] = sx[1]; sk[1] = sk[2]; sx[1] = sx[2];
     sk[2] = 0; sx[2] = 0
  :: else -> break
  od;
  if
  :: (op == READREQ && adv > 0) || (op != READREQ && (a || adv > 1)) ->
     if
     :: bm == 0 -> net_toQ(ACK, (epsn + PMOD - 1) % PMOD, 0)
     :: else -> net_toQ(SACK, epsn, bm)
     fi
  :: else
  fi
}
#endif

active proctype App() {
  posted = 1              /* post the receive at an arbitrary moment */
}

active proctype Resp() {
  byte epsn = START;      /* [RESP-PSN-1] */
  bit latch;              /* nak_latch, [RESP-OOS-1] */
  byte rdpsn;             /* held READ resource (max_dest_rd_atomic = 1), [RESP-DUP-3] */
  bool rdv;
  mtype op; byte p, x; bit a;
  int d, off;
  byte j;
#ifdef SR
  byte bm;                /* [SR-RESP-1] bit i: PSN epsn + i received and placed */
  mtype sk[WIN];          /* kind of the packet placed at epsn + i */
  byte sx[WIN];           /* its data */
  byte adv;               /* PSNs epsn advanced over in this step */
#endif

end:
  do
  :: atomic { (len(toR) > 0 || slR_full) ->
    if
    :: toR?op, p, x, a
    :: slR_full -> slR_full = 0; op = slR_op; p = slR_psn; x = slR_x; a = slR_a
    fi;
    psn_diff(d, p, epsn);
    if
    :: d < 0 ->
       /* duplicate, [PSN-WIN-3] */
       if
       :: op == READREQ ->
          /* [RESP-DUP-2], [RESP-DUP-3]: replay from the held READ */
          psn_diff(off, p, rdpsn);
          if
          :: rdv && off >= 0 && x >= 1 && off + x <= 2 ->
             j = off;
             do
             :: j < off + x -> net_toQ(RRESP, (rdpsn + j) % PMOD, mem[j]); j++
             :: else -> break
             od
          :: else -> skip      /* matches no held READ: dropped */
          fi
       :: else ->
#ifdef BROKEN_DUPWRITE
          /* NEGATIVE TEST: executes the duplicate WRITE again */
          if
          :: op == WFIRST -> deliver(x); mem[0] = x
          :: op == WLAST  -> deliver(x); mem[1] = x
          :: else
          fi;
#endif
          /* [RESP-DUP-1]: re-ACK with epsn - 1 */
          net_toQ(ACK, (epsn + PMOD - 1) % PMOD, 0)
       fi
#ifndef SR
    :: d == 0 ->
       latch = 0;                                   /* [RESP-OOS-3] */
       if
       :: op == WFIRST -> deliver(x); mem[0] = x; epsn = (epsn + 1) % PMOD
       :: op == WLAST ->
          deliver(x); mem[1] = x; epsn = (epsn + 1) % PMOD;
          if :: a -> net_toQ(ACK, p, 0) :: else fi   /* [RESP-ACK-1] */
       :: op == READREQ ->
          /* [RESP-READ-1], [RESP-READ-2]: a new READ starts at offset 0 */
          assert(x == 2);
          rdpsn = p; rdv = 1; epsn = (epsn + 2) % PMOD;
          net_toQ(RRESP, p, mem[0]);
          net_toQ(RRESP, (p + 1) % PMOD, mem[1])
       :: op == SENDONLY ->
          if
          :: !posted -> net_toQ(RNR, p, 0)           /* [RESP-RECV-2] */
          :: else ->
             deliver(x); rbufS = x; rcv_done++;     /* [RESP-RECV-4] */
             epsn = (epsn + 1) % PMOD;
             net_toQ(ACK, p, 0)
          fi
       fi
    :: d > 0 ->
       /* [RESP-OOS-1]: one sequence-error NAK per gap */
       if
       :: !latch -> latch = 1; net_toQ(NAKSEQ, epsn, 0)
       :: else
       fi
#else /* SR */
    :: d >= WIN -> net_toQ(SACK, epsn, bm)          /* beyond the window, [SR-RESP-1] */
    :: d >= 0 && d < WIN && op == READREQ ->
       if
       :: d == 0 ->
          assert(x == 2);
          rdpsn = p; rdv = 1; epsn = (epsn + 2) % PMOD;
          bm = bm >> 2; sk[0] = sk[2]; sx[0] = sx[2]; /* READ PSNs never have bits */
          sk[1] = 0; sx[1] = 0; sk[2] = 0; sx[2] = 0;
          net_toQ(RRESP, p, mem[0]);
          net_toQ(RRESP, (p + 1) % PMOD, mem[1]);
          sr_advance()
       :: else ->
#ifdef BROKEN_SR_READ_EARLY
          /* NEGATIVE TEST: answers a READ that is ahead of epsn at once,
           * before the earlier WRITE packets have been placed */
          net_toQ(RRESP, p, mem[0]);
          net_toQ(RRESP, (p + 1) % PMOD, mem[1]);
#endif
          net_toQ(SACK, epsn, bm)                   /* [SR-RESP-6] */
       fi
    :: d >= 0 && d < WIN && op == SENDONLY && !posted ->
       if
       :: d == 0 -> net_toQ(RNR, p, 0)              /* [SR-RESP-7] */
       :: else -> skip
       fi
    :: d >= 0 && d < WIN && op != READREQ && (op != SENDONLY || posted) ->
       if
       :: (bm >> d) & 1 ->
          /* [SR-RESP-3]: already placed */
          if :: a -> net_toQ(SACK, epsn, bm) :: else fi
       :: else ->
          /* [SR-RESP-2]: place on its own (RETH in every WRITE packet,
           * SRXH RSN/offset for the SEND) */
          placed[x]++; assert(placed[x] == 1);
          if
          :: op == WFIRST -> mem[0] = x
          :: op == WLAST -> mem[1] = x
          :: op == SENDONLY -> rbufS = x
          fi;
          bm = bm | (1 << d); sk[d] = op; sx[d] = x;
          if
          :: d == 0 -> sr_advance()
          :: else -> net_toQ(SACK, epsn, bm)        /* [SR-RESP-5] */
          fi
       fi
#endif
    fi
  }
  od
}

/* ---------------------------------------------------------------- requester */

#ifdef SR
/* [SR-REQ-11]: a timeout marks for resending every index from una up to the
 * send frontier that is not sacked (index 3 is the READ's second response
 * PSN: the READ request, index 2, covers it while the READ is incomplete),
 * and the packet at una in any case [REQ-TMO-6] */
inline sr_timeout_need() {
  i = una;
  do
  :: i < hi ->
     if
     :: i != 3 && !((sacked >> i) & 1) -> need = need | (1 << i)
     :: else
     fi;
     i++
  :: else -> break
  od;
  /* [REQ-TMO-6]: the packet at una goes again even if sacked (tail probe) */
  need = need | (1 << ((una == 3) -> 2 : una))
}
#endif

active proctype Req() {
  byte una;               /* oldest unacknowledged PSN index */
  byte nxt;               /* next PSN index to send */
  byte hi;                /* send frontier: highest index sent + 1 */
  byte ackd;              /* one past the highest index an ACK/NAK covered */
  byte ncmpl;             /* WRs completed, in order */
  byte rbuf[2];           /* READ destination */
  bool rnr_wait; byte rnrp;
  mtype k; byte p, x;
  int a, t;
  byte i, f, c;
#ifndef SR
  byte rresp;             /* READ responses received in order, [REQ-READ-1] */
#else
  byte rgot;              /* READ responses received, bit per offset, [SR-REQ-7] */
  byte sacked, rtxd, need;/* per PSN index bits, [SR-REQ-2], [SR-REQ-3] */
  bool rreq;              /* missing READ run re-requested, [SR-REQ-13] */
#endif

  do
  :: ncmpl == NWR -> break
#ifndef SR
  :: atomic {
       /* [REQ-WIN-1], [REQ-WIN-2], [PSN-WIN-2]: window in PSNs, a READ
        * counts its response PSNs */
       nxt < NPSN && !rnr_wait &&
       ((nxt == 2 || nxt == 3) -> 3 : nxt) - una < WIN ->
       if
       :: nxt == 0 -> net_toR(WFIRST, P(0), D0, 0); nxt = 1
       :: nxt == 1 -> net_toR(WLAST, P(1), D1, 1); nxt = 2     /* [REQ-ACKREQ-1] */
       :: nxt == 2 || nxt == 3 ->
          /* [REQ-READ-3]: resume from the first missing response */
          net_toR(READREQ, P(2 + rresp), 2 - rresp, 1);
          nxt = (ackd > 4 -> ackd : 4)
       :: nxt == 4 -> net_toR(SENDONLY, P(4), D2, 1); nxt = 5
       fi;
       if :: nxt > hi -> hi = nxt :: else fi
     }
  :: atomic { timeout && ncmpl < NWR ->
       nxt = una                                   /* [REQ-TMO-2], [REQ-GBN-1] */
     }
  :: atomic { spur < MAXSPUR && una < hi && !rnr_wait && ncmpl < NWR ->
       spur++; nxt = una                           /* the timer expired too early */
     }
  :: atomic { rnr_wait -> rnr_wait = 0; nxt = rnrp }   /* RNR timer fired, [REQ-RNR-1] */
#else
  :: atomic {
       /* [SR-REQ-3], [SR-REQ-11]: retransmit what is missing, lowest first */
       need != 0 && !rnr_wait ->
       i = 0;
       do
       :: (need >> i) & 1 -> break
       :: else -> i++
       od;
       need = need & ~(1 << i); rtxd = rtxd | (1 << i);
       if
       :: i == 0 -> net_toR(WFIRST, P(0), D0, 0)
       :: i == 1 -> net_toR(WLAST, P(1), D1, 1)
       :: i == 2 ->
          /* [SR-REQ-13], [REQ-READ-3]: the first missing run of the READ */
          if
          :: rgot == 3 -> skip
          :: rgot == 1 -> net_toR(READREQ, P(3), 1, 1)
          :: rgot == 2 -> net_toR(READREQ, P(2), 1, 1)
          :: rgot == 0 -> net_toR(READREQ, P(2), 2, 1)
          fi
       :: i == 4 -> net_toR(SENDONLY, P(4), D2, 1)
       fi
     }
  :: atomic {
       nxt < NPSN && !rnr_wait && need == 0 &&
       /* [SR-REQ-1]; [SR-REQ-17]'s count of PSNs not yet received adds
        * nothing here, where MAX_OUTSTANDING_PSN = SR_WINDOW = WIN */
       ((nxt == 2) -> 3 : nxt) - una < WIN ->
       if
       :: nxt == 0 -> net_toR(WFIRST, P(0), D0, 0); nxt = 1
       :: nxt == 1 -> net_toR(WLAST, P(1), D1, 1); nxt = 2
       :: nxt == 2 -> net_toR(READREQ, P(2), 2, 1); nxt = 4
       :: nxt == 4 -> net_toR(SENDONLY, P(4), D2, 1); nxt = 5
       fi;
       hi = nxt
     }
  :: atomic { timeout && ncmpl < NWR ->
       /* [SR-REQ-11]: every unacknowledged, unsacked packet up to the send point */
       rtxd = 0; rreq = 0;
       sr_timeout_need()
     }
  :: atomic { spur < MAXSPUR && una < hi && !rnr_wait && ncmpl < NWR ->
       spur++;                                     /* the timer expired too early */
       rtxd = 0; rreq = 0;
       sr_timeout_need()
     }
  :: atomic { rnr_wait ->
       /* [SR-REQ-6]: p, then what is neither acknowledged nor sacked */
       rnr_wait = 0;
       i = rnrp;
       do
       :: i < hi ->
          if
          :: i != 3 && !((sacked >> i) & 1) -> need = need | (1 << i)
          :: else
          fi;
          i++
       :: else -> break
       od
     }
#endif
  :: atomic { (len(toQ) > 0 || slQ_full) ->
    if
    :: toQ?k, p, x
    :: slQ_full -> slQ_full = 0; k = slQ_k; p = slQ_psn; x = slQ_x
    fi;
    /* absolute index of the wire PSN, relative to una - 1 ([PSN-WIN-4]) */
    psn_diff(t, p, P(una + PMOD - 1));
    a = una - 1 + t;
    if
    /* ---- READ responses: [REQ-ACK-3], [REQ-READ-1], [SR-REQ-7] */
    :: k == RRESP && hi > 2 && (a == 2 || a == 3) ->
#ifndef SR
       if
       :: a == 2 + rresp ->
          rbuf[rresp] = x; rresp++;
          if :: una < 2 + rresp -> una = 2 + rresp :: else fi;
          if :: rresp == 2 && ackd > una -> una = ackd :: else fi
       :: else -> skip                             /* not the next expected: dropped */
       fi
#else
       if
       :: !((rgot >> (a - 2)) & 1) ->
          rbuf[a - 2] = x; rgot = rgot | (1 << (a - 2));
          if :: una < 2 -> una = 2 :: else fi;     /* implied ACK before the READ */
          if
          :: rgot == 3 ->
             una = (ackd > 4 -> ackd : 4)
          :: rgot == 2 && !rreq -> rreq = 1; need = need | 4   /* [SR-REQ-13] */
          :: else
          fi
       :: else -> skip                             /* duplicate response */
       fi
#endif
    :: k == RRESP && !(hi > 2 && (a == 2 || a == 3)) -> skip   /* outside the window */
    /* ---- ACK: coalesced, [REQ-ACK-1]; NAK/RNR/SACK: PSNs before a are acked */
    :: k != RRESP && (t < 0 || a >= hi || (k != ACK && a < una)) ->
       skip                                        /* [REQ-ACK-2]: outside the window */
    :: k != RRESP && !(t < 0 || a >= hi || (k != ACK && a < una)) ->
       if :: k == ACK -> a = a + 1 :: else fi;     /* a is now "everything below a" */
       if :: a > ackd -> ackd = a :: else fi;
#ifndef SR
       if
       :: rresp < 2 && a > 2 ->
          /* READ incomplete: it stays unacknowledged ([REQ-ACK-1]); an ACK
           * beyond it means its responses were lost ([REQ-ACK-5]) */
          if :: una < 2 + rresp -> una = 2 + rresp :: else fi;
          if :: a > 4 && k == ACK -> nxt = una :: else fi
       :: else -> if :: a > una -> una = a :: else fi
       fi;
       if
       :: k == NAKSEQ && !(rnr_wait && a <= rnrp) ->
          nxt = a                                  /* [REQ-GBN-2] */
       :: k == NAKSEQ && rnr_wait && a <= rnrp -> skip   /* [REQ-RNR-3] */
       :: k == RNR -> rnr_wait = 1; rnrp = a       /* [REQ-RNR-1] */
       :: k == ACK
       fi
#else
       if
       :: rgot != 3 && a > 2 ->
          if :: una < 2 -> una = 2 :: else fi;
          if :: (rgot & 1) && una < 3 -> una = 3 :: else fi;
          if :: a > 4 && !rreq -> rreq = 1; need = need | 4 :: else fi   /* [REQ-ACK-5] */
       :: else -> if :: a > una -> una = a :: else fi
       fi;
       if
       :: k == SACK ->
          /* [SR-REQ-2], [SR-REQ-3] */
          i = 0;
          do
          :: i < WIN ->
             if
             :: (x >> i) & 1 && a + i < NPSN -> sacked = sacked | (1 << (a + i))
             :: else
             fi;
             i++
          :: else -> break
          od;
          f = 0; i = a;            /* f: one past the highest sacked index */
          do
          :: i < NPSN -> if :: (sacked >> i) & 1 -> f = i + 1 :: else fi; i++
          :: else -> break
          od;
          c = a;                   /* missing, not yet resent, below f */
          do
          :: c + 1 < f ->
             if
             :: c != 3 && !((sacked >> c) & 1) && !((rtxd >> c) & 1) ->
                need = need | (1 << c)
             :: else
             fi;
             c++
          :: else -> break
          od
       :: k == RNR -> rnr_wait = 1; rnrp = a; need = 0
       :: k == ACK || k == NAKSEQ
       fi
#endif
    fi;

    /* completions, in posting order ([REQ-CMPL-1], [REQ-CMPL-2]) */
    do
    :: ncmpl == 0 && una >= 2 ->
       assert(mem[0] == D0 && mem[1] == D1);       /* executed before completed */
       ncmpl = 1
#ifndef SR
    :: ncmpl == 1 && rresp == 2 ->
#else
    :: ncmpl == 1 && rgot == 3 ->
#endif
       assert(rbuf[0] == D0 && rbuf[1] == D1);     /* READ sees the WRITE */
       ncmpl = 2
    :: ncmpl == 2 && una >= 5 ->
       assert(rcv_done == 1 && rbufS == D2);       /* SEND delivered once */
       ncmpl = 3
    :: else -> break
    od;
    if :: nxt < una -> nxt = una :: else fi   /* never resend what is acknowledged */
  }
  od;
  all_done = 1;
  assert(dlv == 3 && rcv_done == 1)
}

#ifdef LIVENESS
/* every posted WR eventually completes (check with pan -a -f) */
ltl progress { <> all_done }
#endif
