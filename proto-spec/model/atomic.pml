/*
 * atomic.pml: exactly-once atomics under loss, duplication and premature
 * retransmission (proto-spec requester.md REQ-ATOM, responder.md RESP-ATOM).
 *
 * One requester posts NATOM FETCH_ADD(1) requests (PSN 0..NATOM-1) on one
 * counter, at most CREDIT outstanding (max_rd_atomic [REQ-ATOM-2]); it takes
 * an ATOMIC_ACK only for its oldest outstanding PSN (una) and goes back to
 * una on a timeout (when nothing is in flight) or, up to MAXSPUR times, on a
 * premature one. The responder executes the request at ePSN once, keeps
 * the original value in one of RES resources (max_dest_rd_atomic, the oldest
 * retired when all are held [RESP-READ-4]), answers a duplicate it still
 * holds from the saved value and drops the rest [RESP-ATOM-3]. The network
 * drops up to MAXLOSS frames and duplicates up to MAXDUP (a duplicate goes
 * to the channel's tail: it may also arrive out of order).
 *
 * Properties (assertions, valid end states):
 *  - the counter is never incremented past NATOM: no atomic runs twice;
 *  - the value returned for PSN i is i: each atomic saw exactly the ones
 *    before it [RESP-ATOM-1] [REQ-ATOM-3];
 *  - every atomic completes and the counter ends at NATOM (the requester
 *    terminates; the others rest at their end labels).
 * Negative test: -DBROKEN_DUP_EXEC executes duplicates again; an assertion
 * must fail.
 */
#ifndef MAXLOSS
#define MAXLOSS 2
#endif
#ifndef MAXDUP
#define MAXDUP 1
#endif
#ifndef MAXSPUR
#define MAXSPUR 1
#endif
#define NATOM  3
#define CREDIT 2                 /* max_rd_atomic <= the responder's RES */
#define RES    2                 /* max_dest_rd_atomic */
#define QLEN   8

chan req = [QLEN] of { byte };           /* a request: its PSN */
chan rsp = [QLEN] of { byte, byte };     /* an ATOMIC_ACK: PSN, original value */
byte mem = 0;                            /* the counter */
byte una = 0;
byte loss = 0, dup = 0, spur = 0;

proctype requester()
{
  byte next = 0, psn, orig;
  do
  :: una == NATOM -> break
  :: next < NATOM && next < una + CREDIT && nfull(req) -> req!next; next++
  :: rsp?psn,orig ->
       if
       :: psn == una -> assert(orig == una); una++
       :: else -> skip                                /* a late copy, or ahead: dropped */
       fi
  :: atomic { una < next && empty(req) && empty(rsp) -> next = una }    /* timeout */
  :: atomic { una < next && spur < MAXSPUR && (nempty(req) || nempty(rsp)) -> spur++; next = una }
  od;
  assert(mem == NATOM)
}

proctype responder()
{
  byte epsn = 0, held = 0, psn;          /* saved results for PSNs [held, epsn) */
  byte saved[NATOM];
end:
  do
  :: atomic {
       req?psn ->
       if
       :: psn == epsn ->
            saved[psn] = mem;
            mem++;
            assert(mem <= NATOM);
            if
            :: epsn - held >= RES -> held++
            :: else -> skip
            fi;
            epsn++;
            rsp!psn,saved[psn]
       :: psn < epsn && psn >= held ->
#ifdef BROKEN_DUP_EXEC
            saved[psn] = mem;
            mem++;
            assert(mem <= NATOM);
#endif
            rsp!psn,saved[psn]
       :: else -> skip                                /* retired, or ahead of ePSN */
       fi
     }
  od
}

proctype network()
{
  byte p, o;
end:
  do
  :: atomic { loss < MAXLOSS && nempty(req) -> req?p; loss++ }
  :: atomic { loss < MAXLOSS && nempty(rsp) -> rsp?p,o; loss++ }
  :: atomic { dup < MAXDUP && nempty(req) && nfull(req) -> req?p; req!p; req!p; dup++ }
  :: atomic { dup < MAXDUP && nempty(rsp) && nfull(rsp) -> rsp?p,o; rsp!p,o; rsp!p,o; dup++ }
  od
}

init
{
  atomic { run requester(); run responder(); run network() }
}
