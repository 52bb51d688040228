/*
 * ibcm.pml: Promela model of the InfiniBand CM's connection races
 * (proto-spec/ibcm.md, kernel/cm/ibcm.c): one active side A and one passive
 * side B, REQ / REP / RTU / DREQ / DREP / REJ over a network that loses,
 * duplicates and reorders MADs (each a bounded number of times), with
 * retransmission timers that fire when nothing else can move plus a bounded
 * number of premature expiries (a REQ retried while its REP is in flight).
 *
 * The consumers: B accepts the REQ at once; A sends the RTU on the REP and
 * disconnects right after it or once everything is quiet (so B's REP timer
 * may run first); B may disconnect as soon as it is established (so the
 * DREQs may cross). Max CM retries is 3.
 *
 * Modes (spin -D): MAXLOSS, MAXDUP, MAXREORD, MAXSPUR budgets (default 1);
 *   BROKEN_NO_DUP  negative test: B takes a repeated REQ for a new
 *                  connection (violates [IBCM-STATE-4]); verification MUST fail.
 *   BROKEN_NO_RTU  negative test: A does not answer a REP repeated after its
 *                  RTU (violates [IBCM-STATE-6]); verification MUST fail.
 *
 * Properties: B makes one connection of A's REQ however often it arrives
 * ([IBCM-STATE-3], [IBCM-STATE-4]); A raises one REP event; when everything
 * is quiet, both sides connected, both are in time wait, and nothing is
 * left in flight ([IBCM-STATE-6], [IBCM-STATE-9], [IBCM-STATE-13],
 * [IBCM-TMO-3]); no invalid end state.
 */

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
#define MAXSPUR 1
#endif
#define MAXR 3           /* max CM retries: 1 + 3 sends of a REQ, REP or DREQ */
#define CAP 4

mtype = { REQ, REP, RTU, REJ, DREQ, DREP };
mtype = { IDLE, REQ_SENT, REP_SENT, EST, DREQ_SENT, TW, GAVE_UP };

chan toA = [CAP] of { mtype };
chan toB = [CAP] of { mtype };
bool slA_full, slB_full;       /* one delay slot per direction: overtaken by later MADs */
mtype slA_m, slB_m;
byte losses, dups, reords, spur;

mtype a_st = IDLE, b_st = IDLE;
byte b_conns;                  /* ghost: connections B made */
byte a_reps;                   /* ghost: REP events A raised */
bool a_conn, b_conn;           /* each side was established */

inline send(ch, full_, m_, m) {
  if
  :: nfull(ch) -> ch!m
  :: losses < MAXLOSS -> losses++
  :: dups < MAXDUP && len(ch) < CAP - 1 -> dups++; ch!m; ch!m
  :: reords < MAXREORD && !full_ -> reords++; full_ = 1; m_ = m
  fi
}
#define toB_(m) send(toB, slB_full, slB_m, m)
#define toA_(m) send(toA, slA_full, slA_m, m)

inline recv(ch, full_, m_, m) {
  if
  :: ch?m
  :: full_ -> full_ = 0; m = m_
  fi
}

/* A retransmission timer: when nothing else can move, or early (bounded). */
#define TIMER (timeout || spur < MAXSPUR)
inline expire() {
  if
  :: !timeout && spur < MAXSPUR -> spur++
  :: else -> skip
  fi
}

active proctype A() {
  mtype m;
  byte tries;
  atomic { a_st = REQ_SENT; toB_(REQ) }
end:
  do
  :: atomic {
       (len(toA) > 0 || slA_full) -> recv(toA, slA_full, slA_m, m);
       if
       :: a_st == REQ_SENT && m == REP ->
            a_reps++; assert(a_reps == 1); a_conn = 1;
            toB_(RTU);                                /* the consumer's RTU */
            if
            :: toB_(DREQ); a_st = DREQ_SENT; tries = 0  /* disconnect at once [IBCM-STATE-8] */
            :: a_st = EST                             /* or when all is quiet (below) */
            fi
       :: a_st == REQ_SENT && m == REJ -> a_st = GAVE_UP
#ifndef BROKEN_NO_RTU
       :: (a_st == EST || a_st == DREQ_SENT || a_st == TW) && m == REP ->
            toB_(RTU)                                                  /* [IBCM-STATE-6] */
#endif
       :: a_st == DREQ_SENT && m == DREP -> a_st = TW
       :: a_st == DREQ_SENT && m == DREQ -> toB_(DREP); a_st = TW      /* [IBCM-STATE-13] */
       :: a_st == EST && m == DREQ -> toB_(DREP); a_st = TW            /* [IBCM-STATE-9] */
       :: a_st == TW && m == DREQ -> toB_(DREP)                        /* [IBCM-STATE-9] */
       :: else -> skip                                                 /* duplicate */
       fi
     }
  :: atomic { timeout && a_st == EST -> toB_(DREQ); a_st = DREQ_SENT; tries = 0 }
  :: atomic {
       TIMER && (a_st == REQ_SENT || a_st == DREQ_SENT) -> expire();
       if
       :: tries < MAXR && a_st == REQ_SENT -> tries++; toB_(REQ)       /* [IBCM-TMO-3] */
       :: tries < MAXR && a_st == DREQ_SENT -> tries++; toB_(DREQ)
       :: tries == MAXR && a_st == REQ_SENT -> a_st = GAVE_UP
       :: tries == MAXR && a_st == DREQ_SENT -> a_st = TW
       fi
     }
  od
}

active proctype B() {
  mtype m;
  byte tries;
end:
  do
  :: atomic {
       (len(toB) > 0 || slB_full) -> recv(toB, slB_full, slB_m, m);
       if
       :: b_st == IDLE && m == REQ ->
            b_conns++; toA_(REP); b_st = REP_SENT; tries = 0          /* accepted at once */
       :: b_st != IDLE && m == REQ ->
#ifdef BROKEN_NO_DUP
            b_conns++;                                                 /* a "new" connection */
#endif
            if
            :: b_st == REP_SENT -> toA_(REP)                           /* [IBCM-STATE-4] */
            :: b_st == TW -> toA_(REJ)                                 /* stale [IBCM-STATE-5] */
            :: else -> skip
            fi
       :: b_st == REP_SENT && m == RTU -> b_st = EST; b_conn = 1
       :: (b_st == REP_SENT || b_st == EST) && m == DREQ ->
            b_conn = 1; toA_(DREP); b_st = TW                          /* [IBCM-STATE-9] */
       :: b_st == DREQ_SENT && m == DREQ -> toA_(DREP); b_st = TW      /* [IBCM-STATE-13] */
       :: b_st == DREQ_SENT && m == DREP -> b_st = TW
       :: b_st == TW && m == DREQ -> toA_(DREP)
       :: else -> skip
       fi;
       assert(b_conns <= 1)
     }
  :: atomic { b_st == EST -> toA_(DREQ); b_st = DREQ_SENT; tries = 0 } /* B closes too */
  :: atomic {
       TIMER && (b_st == REP_SENT || b_st == DREQ_SENT) -> expire();
       if
       :: tries < MAXR && b_st == REP_SENT -> tries++; toA_(REP)
       :: tries < MAXR && b_st == DREQ_SENT -> tries++; toA_(DREQ)
       :: tries == MAXR && b_st == REP_SENT -> toA_(REJ); b_st = GAVE_UP   /* [IBCM-TMO-3] */
       :: tries == MAXR && b_st == DREQ_SENT -> b_st = TW
       fi
     }
  od
}

/* When everything is quiet: both connected, both in time wait. */
active proctype Outcome() {
end:
  atomic {
    timeout && (a_st == TW || a_st == GAVE_UP) && (b_st == TW || b_st == GAVE_UP || b_st == EST) ->
    assert(a_st == TW && b_st == TW && a_conn && b_conn && a_reps == 1 && b_conns == 1)
  }
}
