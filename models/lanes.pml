/*
 * The exclusive-lane protocol (docs/design.md, "Exclusive lanes"), forbid-queue policy, with the
 * claim, lease and fence it relies on. One lane, runs 1..NR (slot = run number), 2 workers, one
 * creator/operator process. Checked by Spin: `npm run model-check` (tools/model-check.ts).
 *
 * Abstractions (each keeps every behaviour of the code, or says what it drops):
 * - DynamoDB: every write is one atomic conditional update (an `atomic` block); a Query is one
 *   atomic read. A write's response may be lost (budget LOSSES): the write committed, the writer
 *   sees a failure and retries by its retry rule (acquire and takeFromEnded recognise their own
 *   commit by lastWrite, release's retry is refused and looks if the lane is free, claim
 *   recognises its own lease, the outcome write its own status and token).
 * - SQS: a bag of messages, msgs[r] = copies of run r's message in flight; any copy may be
 *   received next; a copy may be delivered twice (budget DUPS). A message not acked (crash,
 *   pause past the visibility timeout, RETRY) comes back.
 * - Time: every run is due. lastWrite is the writer's identity (1, 2 workers, 3 creator); a
 *   worker does not write between its release and its advanceFloor, so "lastWrite = my release's
 *   id" is "lastWrite = me". The look's advanceFloor is allowed on every look (the code's ">= 8
 *   ended runs passed over" needs a longer history than 3 runs: allowing it always adds
 *   behaviours), to any value above the floor up to min(f.slot, now - 10 s), where now - 10 s is
 *   over-approximated by maxCreated + 1 (every later on-time run has a slot above it).
 * - A claim refused because another worker holds a live lease acks the duplicate (the code
 *   returns it to the queue: a later copy of a live holder's message only ends in claim's
 *   "terminal: runEnded", which a crash or pause copy (budgets) already covers).
 *
 * Variants: -DHAZARD_x puts back one known hazard; -DASWRITTEN_x the protocol text where the model
 * found it wrong (see models/README.md). -DCRASH adds a worker crash at any step.
 */

#ifndef NR
#define NR 3
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef RETRIES
#define RETRIES 1
#endif
#ifndef PAUSES
#define PAUSES 1
#endif
#ifndef OPS
#define OPS 1
#endif
#ifndef ADVANCES
#define ADVANCES 1
#endif
#ifndef MAXMSG
#define MAXMSG 1
#endif
#ifdef CRASH
#define CRASHES 1
#else
#define CRASHES 0
#endif

#define ABSENT 0
#define WAIT 1   /* READY | RETRY | UNKNOWN: claimable */
#define RUN 2    /* RUNNING: leased, fencing token */
#define TERM 3   /* SUCCEEDED | DEAD | SKIPPED | SUPERSEDED | MANUAL */
#define CREATOR 3

#define open(s) (st[s] == WAIT || st[s] == RUN)
#define bit(s) (1 << (s))

/* runs (the ledger) */
byte st[NR + 1];
byte tok[NR + 1];       /* claims so far: the fencing token of run r is r*4 + tok[r] */
byte owner[NR + 1];     /* worker whose lease it is */
bool expired[NR + 1];   /* the lease ran out (its worker paused or crashed) */
/* the marker */
byte holder;            /* 0: free */
byte floor;             /* 0: absent (-inf) */
byte lw;                /* lastWrite: who wrote last */
/* the fenced store a handler writes to */
byte storeMax;
/* SQS */
byte msgs[NR + 1];
/* budgets of faults and operator actions */
byte losses = LOSSES;
byte dups = DUPS;
byte retries = RETRIES;
byte pauses = PAUSES;
byte crashes = CRASHES;
byte advances = ADVANCES;  /* looks that pass over >= 8 ended runs and advance the floor */
bool crashed;
byte maxCreated;
/* ghosts (properties only) */
bool published[NR + 1]; /* created or revived, its lowerFloor done: the floor invariant covers it */
byte inHandler[3];      /* the run whose handler worker w executes (0: none) */
byte htok[3];           /* its token */
byte olderOpen[3];      /* older runs open and published when worker w took the lane, still open */
byte landedMax;         /* the highest token the store accepted */

#define live(w) (inHandler[w] != 0 && st[inHandler[w]] == RUN && tok[inHandler[w]] == htok[w] && !expired[inHandler[w]])
#define belowFloor(s) (published[s] && open(s) && floor != 0 && s < floor)
/* (a) one live holder; (e) the floor invariant: every open published run is at or above the floor */
#define ONE_LIVE_HOLDER (!(live(1) && live(2)))
#define FLOOR_BELOW_OPEN_RUNS (!belowFloor(1) && !belowFloor(2) && !belowFloor(3))

/* a write's response is lost (after it committed): the writer sees a failure */
#define LOSE(lost) if :: losses > 0 -> losses--; lost = 1 :: true -> lost = 0 fi

/* the older runs that are open and published now (order ghost) */
inline snapshotOlder(r) {
  olderOpen[me] = 0;
  i = 1;
  do
  :: i < r -> if :: open(i) && published[i] -> olderOpen[me] = olderOpen[me] | bit(i) :: else fi; i++
  :: else -> break
  od;
  i = 0
}

/* a run ended: it no longer counts as an older open run for anybody */
inline ended(s) {
  olderOpen[1] = olderOpen[1] & ~bit(s);
  olderOpen[2] = olderOpen[2] & ~bit(s)
}

/* send a run's message; copies beyond MAXMSG in flight are merged (one more identical copy
   adds no behaviour two workers can use) */
inline send(s) {
  if :: msgs[s] < MAXMSG -> msgs[s]++ :: else fi
}

/* crash at this step: the worker stops; its message comes back, its lease runs out */
#ifndef CRASH
#define CRASHPOINT skip
#else
#define CRASHPOINT \
  if \
  :: crashes > 0 -> atomic { crashes--; crashed = 1; send(r); \
       if :: st[r] == RUN && owner[r] == me -> expired[r] = 1 :: else fi; inHandler[me] = 0 }; goto dead \
  :: true \
  fi
#endif

/* ---- marker writers ---- */

/* acquire(r): laneFree OR heldBy(r): holder := r; returns the old item (floor). */
inline acquire(r) {
  do
  :: atomic {
       if
       :: holder == 0 || holder == r -> holder = r; lw = me; fl = floor; ok = 1; snapshotOlder(r); LOSE(lost)
       :: else -> h = holder; fl = floor; ok = 0; lost = 0
       fi
     };
     if :: lost -> skip :: else -> break fi   /* retry: heldBy(r) now */
  od
}

/* takeFromEnded(r, h): heldBy(h) AND run h terminal or missing (one transaction): holder := r */
inline takeFromEnded(r, h) {
  do
  :: atomic {
       if
       :: holder == h && (st[h] == TERM || st[h] == ABSENT) ->
            holder = r; lw = me; ok = 1; snapshotOlder(r);
#ifndef ASWRITTEN_TAKE
            fl = floor;   /* the floor as of the take (the transaction returns nothing: read it after) */
#endif
            LOSE(lost)
       :: else -> ok = (holder == r && lw == me); lost = 0   /* a retry recognises its own commit */
       fi
     };
     if :: lost -> skip :: else -> break fi
  od
}

/* release(r): heldBy(r): holder := none. relOk: it freed the lane; h: the holder seen on refusal */
inline release(r) {
  do
  :: atomic {
       if
       :: holder == r -> holder = 0; lw = me; relOk = 1; LOSE(lost)
       :: else -> relOk = 0; h = holder; lost = 0
       fi
     };
     if :: lost -> skip :: else -> break fi   /* the retry is refused */
  od
}

/* beforeClaim's release (fix): release(r) AND run r is not RUNNING, one transaction */
inline yieldLane(r) {
  do
  :: atomic {
       if
       :: holder == r && st[r] != RUN -> holder = 0; lw = me; relOk = 1; running = 0; LOSE(lost)
       :: else -> relOk = 0; h = holder; running = (holder == r && st[r] == RUN); lost = 0
       fi
     };
     if :: lost -> skip :: else -> break fi
  od
}

/* lowerFloor(s): floor exists AND floor > s: floor := s */
inline lowerFloor(s) {
  atomic {
#ifdef ASWRITTEN_LOWER
    if :: floor != 0 && floor > s -> floor = s; lw = me :: else fi
#else
    /* every lowerFloor stamps lastWrite, lowering or not: a look that queried before the run's
       put can then not advance the floor past it */
    if :: floor != 0 && floor > s -> floor = s :: else fi;
    lw = me
#endif
  }
}

/* advanceFloor(id, v): lastWrite = id (nobody wrote since our release): floor := v */
inline advanceFloor(v) {
  atomic {
#ifdef HAZARD_ADVANCE_UNCONDITIONAL
    floor = v; lw = me
#else
    if :: lw == me -> floor = v :: else fi
#endif
  }
}

/* look (dispatchNextWaiting, forbid-queue): the first open run from the floor on; send it if it
   waits; maybe advanceFloor to min(f.slot, now - 10 s) */
inline look() {
  atomic {
    f = 0; i = (floor == 0 -> 1 : floor);
    do
    :: i <= NR && f == 0 -> if :: open(i) -> f = i :: else -> i++ fi
    :: else -> break
    od;
    fwait = (f != 0 && st[f] == WAIT);
    bound = (f != 0 -> f : maxCreated + 1);
    i = 0
  };
  if :: fwait -> send(f) :: else fi;
  if
  :: true   /* fewer than 8 ended runs passed over */
  :: advances > 0 && floor < bound -> advances--; v = bound; advanceFloor(v)
  fi
}

/* runEnded(r): release; a refused release looks anyway when the lane is free */
inline runEnded(r) {
#ifdef HAZARD_LOOK_BEFORE_RELEASE
  look();
  release(r);
#else
  release(r);
#ifdef HAZARD_REFUSED_NO_LOOK
  if :: relOk -> look() :: else fi
#else
  if :: relOk || h == 0 -> look() :: else fi
#endif
#endif
}

/* ---- the run ---- */

/* claim(r): waiting, or RUNNING with its lease run out: RUNNING, token + 1, lease to me; one
   transaction with a check that the lane is held by r (as written: no check) */
#ifdef ASWRITTEN_CLAIM
#define CLAIM_LANE_CHECK
#else
#define CLAIM_LANE_CHECK holder == r &&
#endif
inline claim(r) {
  lost = 0;
  do
  :: atomic {
       if
       :: CLAIM_LANE_CHECK (st[r] == WAIT || (st[r] == RUN && expired[r])) ->
            st[r] = RUN; tok[r]++; owner[r] = me; expired[r] = 0; mytok = tok[r]; ok = 1;
            /* (b) slot order: no older run open and published since this worker took the lane */
            assert((olderOpen[me] & (bit(1) | bit(2) | bit(3))) == 0);
            LOSE(lost);
            if :: !lost -> inHandler[me] = r; htok[me] = mytok :: else fi
       :: st[r] == RUN && owner[r] == me && !expired[r] && lost -> ok = 1; lost = 0;   /* its own lease */
            inHandler[me] = r; htok[me] = mytok
       :: else -> ok = 0; lost = 0; cterm = (st[r] == TERM || st[r] == ABSENT);
            notHeld = (holder != r && (st[r] == WAIT || (st[r] == RUN && expired[r])))
       fi
     };
     if :: lost -> skip :: else -> break fi
  od
}

/* the handler's fenced write: the store refuses a token lower than one it accepted */
inline effect(r) {
  atomic {
    if
    :: r * 4 + mytok >= storeMax ->
         /* (c) the store never accepts a token lower than one it saw */
         assert(r * 4 + mytok >= landedMax);
         storeMax = r * 4 + mytok; landedMax = storeMax
    :: else
    fi
  }
}

/* the outcome write: RUNNING and my token (the fence) */
inline outcome(r) {
  if :: retries > 0 -> retries--; out = WAIT :: true -> out = TERM fi;
  lost = 0;
  do
  :: atomic {
       inHandler[me] = 0;
       if
#ifdef HAZARD_UNFENCED_OUTCOME
       :: st[r] == RUN ->
#else
       :: st[r] == RUN && tok[r] == mytok ->
#endif
            /* (c) an outcome lands only under the run's current token */
            assert(tok[r] == mytok);
            st[r] = out; ok = 1; if :: out == TERM -> ended(r) :: else fi; LOSE(lost)
       :: else -> ok = (lost && st[r] == out && tok[r] == mytok); lost = 0   /* own commit? */
       fi
     };
     if :: lost -> skip :: else -> break fi
  od
}

/* beforeClaim, forbid-queue: an open run with slot in [floor, r): release + look, wait */
inline beforeClaim(r) {
  atomic {
    older = 0; i = (fl == 0 -> 1 : fl);
    do
    :: i < r -> if :: open(i) -> older = 1 :: else fi; i++
    :: else -> break
    od;
    i = 0
  }
}

proctype worker(byte me) {
  byte r, h, f, v, i, bound, mytok, fl, out;
  bool ok, lost, relOk, older, fwait, cterm, running, notHeld;
end_idle:
  do
  :: atomic {
       if
       :: msgs[1] > 0 -> r = 1
       :: msgs[2] > 0 -> r = 2
       :: msgs[3] > 0 -> r = 3
       fi;
       if :: dups > 0 -> dups-- :: true -> msgs[r]-- fi   /* a duplicate leaves a copy */
     };
     /* 2. acquire */
take:
     acquire(r);
     CRASHPOINT;
     if
     :: ok -> skip
     :: !ok && (st[h] == TERM || st[h] == ABSENT) ->
          takeFromEnded(r, h);
          if :: ok -> skip :: else -> goto take fi
     :: else -> goto done   /* blocked by an open holder: ack and wait */
     fi;
     CRASHPOINT;
     /* 3. forbid-queue */
     beforeClaim(r);
     if
     :: older ->
#ifdef HAZARD_ACK_WITHOUT_RELEASE
          goto done;
#endif
#ifdef ASWRITTEN_YIELD
          release(r); CRASHPOINT;
          if :: relOk || h == 0 -> look() :: else fi;
          goto done
#else
          /* the release is one transaction with a check that run r is not RUNNING: a copy of a
             running holder's message passes acquire (heldBy) and must not free its lane */
          yieldLane(r); CRASHPOINT;
          if
          :: running -> skip   /* r started meanwhile: it goes on (claim: a takeover, or refused) */
          :: !running && (relOk || h == 0) -> look(); goto done
          :: else -> goto done
          fi
#endif
     :: else
     fi;
     /* 4. claim */
     claim(r);
     CRASHPOINT;
     if
     :: ok -> skip
     :: !ok && cterm -> runEnded(r); goto done
     :: !ok && notHeld -> goto take   /* the lane moved since acquire: back to 2 */
     :: else -> goto done    /* another worker's live lease */
     fi;
     /* 5. the handler */
     if
     :: pauses > 0 -> atomic { pauses--; expired[r] = 1; send(r) }   /* paused past its lease */
     :: true
     fi;
     CRASHPOINT;
     effect(r);
     CRASHPOINT;
     outcome(r);
     CRASHPOINT;
     if
     :: ok && out == TERM -> runEnded(r)
     :: ok && out == WAIT -> send(r)   /* RETRY keeps the lane; its next attempt comes back */
     :: else                           /* fenced out */
     fi;
done:
     skip;
     /* forget this delivery's locals (fewer states) */
     d_step { r = 0; h = 0; f = 0; v = 0; bound = 0; mytok = 0; fl = 0; out = 0;
              ok = 0; lost = 0; relOk = 0; older = 0; fwait = 0; cterm = 0; running = 0; notHeld = 0 }
  od;
dead:
  skip
}

/* the planner (on-time runs in slot order), backfill of the slots it left out, and one operator
   action: retry (revive a terminal run) or resolve (settle a waiting run MANUAL) */
active proctype creator() {
  byte me = CREATOR;
  byte s, r, h, f, v, i, bound, skipped;
  bool relOk, lost, fwait;
  s = 1;
  do
  :: s <= NR ->
       if
       :: atomic { st[s] = WAIT; published[s] = 1; maxCreated = s }; send(s)   /* on time: no lower */
#ifndef NOBACKFILL
       :: skipped = skipped | bit(s)                                              /* left for backfill */
#endif
       fi;
       s++
  :: else -> break
  od;
  s = 1;
  do
  :: s <= NR ->
       if
       :: (skipped & bit(s)) && s < maxCreated ->
#ifdef HAZARD_LOWER_BEFORE_PUT
            lowerFloor(s);
            st[s] = WAIT;
#else
            st[s] = WAIT;      /* put first */
            lowerFloor(s);
#endif
            published[s] = 1;
            send(s)
       :: else
       fi;
       s++
  :: else -> break
  od;
#if OPS > 0
end_op:
  if
  :: atomic { st[1] == TERM -> r = 1 }
  :: atomic { st[2] == TERM -> r = 2 }
  :: atomic { st[3] == TERM -> r = 3 }
  :: atomic { st[1] == WAIT -> r = 1 + 4 }
  :: atomic { st[2] == WAIT -> r = 2 + 4 }
  :: atomic { st[3] == WAIT -> r = 3 + 4 }
  fi;
  if
  :: r <= NR ->          /* ops retry: revive, then lowerFloor, then send */
       atomic { st[r] == TERM -> st[r] = WAIT; published[r] = 0 };
       lowerFloor(r);
       published[r] = 1;
       send(r)
  :: r > NR ->           /* ops resolve: settle a waiting run MANUAL, then runEnded if it held */
       r = r - 4;
       atomic { if :: st[r] == WAIT -> st[r] = TERM; ended(r); s = tok[r] :: else -> s = 0 fi };
       if :: s > 0 -> runEnded(r) :: else fi
  fi
#endif
}

init {
  run worker(1);
  run worker(2)
}

active proctype monitor() {
end_monitor:
  do
  :: atomic { !ONE_LIVE_HOLDER -> assert(ONE_LIVE_HOLDER) }
  :: atomic { !FLOOR_BELOW_OPEN_RUNS -> assert(FLOOR_BELOW_OPEN_RUNS) }
  od
}

/* (d) every waiting run eventually leaves waiting (runs, or is ended), unless a worker crashed */
#define W1 (st[1] == WAIT)
#define W2 (st[2] == WAIT)
#define W3 (st[3] == WAIT)
ltl progress { [] ((W1 -> <> (!W1 || crashed)) && (W2 -> <> (!W2 || crashed)) && (W3 -> <> (!W3 || crashed))) }
