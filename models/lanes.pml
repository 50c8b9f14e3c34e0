/*
 * The exclusive-lane protocol (docs/design.md, "Exclusive lanes"), forbid-queue policy, with the
 * claim, lease and fence it relies on. One lane, runs 1..3 (slot = run number), 2 workers, one
 * creator/operator process. Checked by Spin through `npm run model-check` (tools/model-check.ts);
 * the mapping to the code and the README is in models/README.md.
 *
 * Each worker is a step machine: one step = one call to DynamoDB or SQS (an atomic conditional
 * write, a Query, a send), with the worker's own decisions folded into the step that reads what
 * they depend on. Names of steps and inlines are the code's functions.
 *
 * Abstractions (each keeps the code's behaviours, or says what it bounds):
 * - A write's response may be lost (budget LOSSES): the write committed, the writer sees a
 *   failure and retries by its rule (acquire: heldBy(r) lets the retry through; takeFromEnded
 *   recognises its own commit by lastWrite; release's retry is refused and looks if the lane is
 *   free; claim recognises its own lease; the outcome write its own status under its token).
 * - SQS is a bag: msgs[r] copies of run r's message (at most MAXMSG: a further identical copy is
 *   merged); any may be received next; one may be delivered twice (budget DUPS). A message not
 *   acked (crash, pause past the visibility timeout, RETRY) comes back. A send is folded into
 *   the step before it (a message received later is the same as one sent later).
 * - Time: every run is due. lastWrite holds the writer (1, 2: workers, 3: creator/operator): a
 *   worker writes nothing between its release and its advanceFloor, so "lastWrite = my release's
 *   id" is "lastWrite = me". A look may advance the floor (budget ADVANCES; the code's ">= 8 ended
 *   runs passed over" needs a longer history than 3 runs) to min(f.slot, now - 10 s), where
 *   now - 10 s is over-approximated by maxCreated + 1 (every later on-time run is above it).
 * - A claim refused by another worker's live lease acks the copy (the code returns it to the
 *   queue; a later copy only finds the run RUNNING or ended, which DUPS and pauses cover).
 * - A pause (budget PAUSES) lets the lease run out while the worker is in its handler; its
 *   message comes back; the worker then goes on with its old token. A crash (-DCRASH, budget 1)
 *   stops a worker at any step; its message comes back, its lease runs out.
 *
 * Variants: -DHAZARD_x puts back one known hazard; -DASWRITTEN_x the protocol text at a point
 * where this model found it wrong (models/README.md).
 */

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

#define NR 3
#define ABSENT 0
#define WAIT 1   /* READY | RETRY | UNKNOWN: claimable */
#define RUN 2    /* RUNNING: leased, fencing token */
#define TERM 3   /* SUCCEEDED | DEAD | SKIPPED | SUPERSEDED | MANUAL */
#define CREATOR 3

#define open(s) (st[s] == WAIT || st[s] == RUN)
#define bit(s) (1 << (s))

/* the ledger's runs */
byte st[NR + 1];
byte tok[NR + 1];       /* claims so far: run r's fencing token is r*8 + tok[r] */
byte owner[NR + 1];     /* the worker whose lease it is */
bool expired[NR + 1];   /* the lease ran out (its worker paused or crashed) */
/* the lane's marker */
byte holder;            /* 0: free */
byte floor;             /* 0: absent (-inf) */
byte lw;                /* lastWrite: who wrote last */
/* the fenced store the handler writes to */
byte storeMax;
/* SQS */
byte msgs[NR + 1];
/* budgets */
byte losses = LOSSES;
byte dups = DUPS;
byte retries = RETRIES;
byte pauses = PAUSES;
byte crashes = CRASHES;
byte advances = ADVANCES;
bool crashed;
byte maxCreated;
/* ghosts, for the properties only */
bool published[NR + 1]; /* created or revived, and its lowerFloor done */
byte inHandler[3];      /* the run whose handler worker w executes (0: none) */
byte htok[3];           /* under which token */
byte olderOpen[3];      /* older runs open and published when worker w took the lane, still open */
byte landedMax;         /* the highest token the store accepted */

/* (a) one live holder: a handler executing under its run's current token and a lease not run out */
#define live(w) (inHandler[w] != 0 && st[inHandler[w]] == RUN && tok[inHandler[w]] == htok[w] && !expired[inHandler[w]])
#define ONE_LIVE_HOLDER (!(live(1) && live(2)))
/* (e) the floor invariant: every open run (published: its lowerFloor done) is at or above the floor */
#define belowFloor(s) (published[s] && open(s) && floor != 0 && s < floor)
#define FLOOR_BELOW_OPEN_RUNS (!belowFloor(1) && !belowFloor(2) && !belowFloor(3))

/* a write's response is lost (after it committed): the writer sees a failure */
#define LOSE if :: losses > 0 -> losses--; lost = 1 :: true -> lost = 0 fi

inline send(s) {
  if :: msgs[s] < MAXMSG -> msgs[s]++ :: else fi
}

/* order ghost: the older runs open and published now */
inline snapshotOlder(r) {
  olderOpen[me] = 0;
  if :: r > 1 && open(1) && published[1] -> olderOpen[me] = olderOpen[me] | bit(1) :: else fi;
  if :: r > 2 && open(2) && published[2] -> olderOpen[me] = olderOpen[me] | bit(2) :: else fi
}

/* a run ended: it no longer counts as an older open run for anybody */
inline ended(s) {
  olderOpen[1] = olderOpen[1] & ~bit(s);
  olderOpen[2] = olderOpen[2] & ~bit(s)
}

/* ---- the worker's steps ---- */
#define IDLE 0
#define ACQ 1         /* acquire */
#define READH 2       /* getRun(holder) */
#define TAKE 3        /* takeFromEnded */
#define BC 4          /* beforeClaim's Query */
#define YIELD 5       /* beforeClaim's release */
#define CLAIM 6       /* claim */
#define HANDLER 7     /* the handler's fenced write */
#define OUTCOME 8     /* the outcome write */
#define REL 9         /* runEnded: release */
#define LOOKQ 10      /* look (dispatchNextWaiting): Query, send */
#define LOOKADV 11    /* look: advanceFloor */

/* forget the delivery's locals (fewer states), back to the queue */
#define FINISH pc = IDLE; r = 0; h = 0; fl = 0; mytok = 0; out = 0; bound = 0; lost = 0; after = IDLE

/* acquire(r): laneFree OR heldBy(r): holder := r; returns the old item (the floor) */
inline acquire() {
  if
  :: holder == 0 || holder == r ->
       holder = r; lw = me; fl = floor; snapshotOlder(r); LOSE;
       pc = (lost -> ACQ : BC)   /* a lost response: the retry passes as heldBy(r) */
  :: else -> h = holder; fl = floor; pc = READH
  fi
}

/* takeFromEnded(r, h): heldBy(h) AND run h terminal or missing (one transaction): holder := r */
inline takeFromEnded() {
  if
  :: holder == h && (st[h] == TERM || st[h] == ABSENT) ->
       holder = r; lw = me; snapshotOlder(r);
#ifndef ASWRITTEN_TAKE
       fl = floor;   /* the floor as of the take (a transaction returns nothing: read it after) */
#endif
       LOSE; pc = (lost -> TAKE : BC)
  :: else ->
       if
       :: holder == r && lw == me -> pc = BC   /* the retry recognises its own commit */
       :: else -> pc = ACQ                     /* the lane moved: back to acquire */
       fi
  fi
}

/* beforeClaim, forbid-queue: an open run with slot in [floor, r) exists: yield, else claim */
inline beforeClaim() {
  if
  :: (fl <= 1 && r > 1 && open(1)) || (fl <= 2 && r > 2 && open(2)) ->
#ifdef HAZARD_ACK_WITHOUT_RELEASE
       FINISH   /* acks and waits, keeping the lane */
#elif defined(HAZARD_LOOK_BEFORE_RELEASE)
       after = YIELD; pc = LOOKQ   /* looks first, releases after */
#else
       pc = YIELD
#endif
  :: else -> pc = CLAIM
  fi
}

/* release(r)'s condition. The protocol: heldBy(r). Here one transaction with a check that run r
   is not RUNNING: a copy of a running holder's message passes acquire (heldBy) and must not free
   the lane under it in beforeClaim; and a run revived and claimed again holds the lane under the
   same run id, which the runEnded of its earlier end must not free. */
#ifdef ASWRITTEN_RELEASE
#define RELEASABLE holder == r
#else
#define RELEASABLE holder == r && st[r] != RUN
#endif

/* beforeClaim's release(r) + look */
inline yieldLane() {
  if
  :: RELEASABLE ->
       holder = 0; lw = me; LOSE;
       if :: lost -> skip :: !lost && after == YIELD -> FINISH :: else -> pc = LOOKQ fi
  :: else ->
       if
       :: holder == r -> FINISH   /* r is RUNNING (this is a copy): its worker goes on, or takes over later */
       :: holder == 0 && after != YIELD -> pc = LOOKQ /* our own lost commit, or freed since: look */
       :: else -> FINISH
       fi
  fi
}

/* claim(r): waiting, or RUNNING with its lease run out: RUNNING, token + 1, lease to me. One
   transaction with a check that the lane is held by r (the protocol has no such check). */
#ifdef ASWRITTEN_CLAIM
#define HELD_FOR_CLAIM true
#else
#define HELD_FOR_CLAIM holder == r
#endif
inline claim() {
  if
  :: HELD_FOR_CLAIM && (st[r] == WAIT || (st[r] == RUN && expired[r])) ->
       st[r] = RUN; tok[r]++; owner[r] = me; expired[r] = 0; mytok = tok[r];
       /* (b) slot order: no older run open and published since this worker took the lane */
       assert((olderOpen[me] & (bit(1) | bit(2))) == 0);
       LOSE;
       if :: !lost -> inHandler[me] = r; htok[me] = mytok; pc = HANDLER :: else fi
  :: st[r] == RUN && owner[r] == me && !expired[r] && lost ->   /* the retry finds its own lease */
       lost = 0; inHandler[me] = r; htok[me] = mytok; pc = HANDLER
  :: else ->
       lost = 0;
       if
       :: st[r] == TERM || st[r] == ABSENT -> after = IDLE; pc = REL   /* runEnded(r) */
       :: st[r] == WAIT || (st[r] == RUN && expired[r]) -> pc = ACQ    /* the lane moved */
       :: else -> FINISH                                                /* another's live lease */
       fi
  fi
}

/* the handler's fenced write: the store refuses a token lower than the highest it accepted */
inline effect() {
  if
  :: r * 8 + mytok >= storeMax ->
       assert(r * 8 + mytok >= landedMax);   /* (c) never a token lower than one it accepted */
       storeMax = r * 8 + mytok; landedMax = storeMax
  :: else
  fi;
  if :: retries > 0 -> retries--; out = WAIT :: true -> out = TERM fi;
  pc = OUTCOME
}

/* the outcome write: RUNNING under my token (the fence) */
#ifdef HAZARD_UNFENCED_OUTCOME
#define FENCE true
#else
#define FENCE tok[r] == mytok
#endif
inline outcome() {
  inHandler[me] = 0; htok[me] = 0;
  if
  :: st[r] == RUN && FENCE ->
       assert(tok[r] == mytok);   /* (c) an outcome lands only under the run's current token */
       st[r] = out; owner[r] = 0;
       if :: out == TERM -> ended(r) :: else fi;
       LOSE;
       if
       :: lost -> skip                                      /* retried: see below */
       :: !lost && out == TERM -> after = IDLE; pc = REL     /* runEnded(r) */
       :: !lost && out == WAIT -> send(r); FINISH           /* RETRY keeps the lane */
       fi
  :: else ->
       if
       :: lost && st[r] == out && tok[r] == mytok ->       /* the retry recognises its own commit */
            lost = 0;
            if :: out == TERM -> after = IDLE; pc = REL :: else -> send(r); FINISH fi
       :: else -> FINISH                                     /* fenced out */
       fi
  fi
}

/* release(r) in runEnded: heldBy(r): holder := none. A refused release looks anyway when the
   lane is free (our own commit whose response was lost, or someone else's release after). */
inline release() {
  if
  :: RELEASABLE -> holder = 0; lw = me; LOSE;
       if :: lost -> skip :: else -> pc = (after == REL -> IDLE : LOOKQ) fi
  :: else ->
#ifdef HAZARD_REFUSED_NO_LOOK
       FINISH
#else
       if :: holder == 0 && after != REL -> pc = LOOKQ :: else -> FINISH fi
#endif
  fi;
  if :: pc == IDLE -> FINISH :: else fi
}

/* look (dispatchNextWaiting, forbid-queue): the first open run f from the floor on; send it if
   it waits; then maybe advanceFloor to min(f.slot, now - 10 s) */
inline lookQuery() {
  h = (floor == 0 -> 1 : floor);   /* h: the Query's cursor */
  do
  :: h <= NR && !open(h) -> h++
  :: else -> break
  od;
  if :: h <= NR && st[h] == WAIT -> send(h) :: else fi;
  bound = (h <= NR -> h : maxCreated + 1);
  h = 0;
  pc = LOOKADV
}

inline lookAdvance() {
  if
  :: true
  :: advances > 0 && floor < bound ->   /* advanceFloor(release id, bound): lastWrite = id */
       advances--;
#ifdef HAZARD_ADVANCE_UNCONDITIONAL
       floor = bound; lw = me
#else
       if :: lw == me -> floor = bound :: else fi
#endif
  fi;
#ifdef HAZARD_LOOK_BEFORE_RELEASE
  if :: after == YIELD -> pc = YIELD :: else -> FINISH fi   /* then release */
#else
  FINISH
#endif
}

/* a message of run r is received; a duplicate delivery leaves a copy in the queue */
#define RECEIVE if :: dups > 0 -> dups-- :: true -> msgs[r]-- fi; pc = ACQ

proctype worker(byte me) {
  byte pc, r, h, fl, mytok, out, bound, after;
  bool lost;
end_idle:
  do
  :: atomic { pc == IDLE && msgs[1] > 0 -> r = 1; RECEIVE }
  :: atomic { pc == IDLE && msgs[2] > 0 -> r = 2; RECEIVE }
  :: atomic { pc == IDLE && msgs[3] > 0 -> r = 3; RECEIVE }
  :: atomic { pc == ACQ -> acquire() }
  :: atomic { pc == READH ->   /* getRun(h) */
       if
       :: st[h] == TERM || st[h] == ABSENT -> pc = TAKE
       :: else -> FINISH       /* blocked by an open holder: ack and wait for its look */
       fi }
  :: atomic { pc == TAKE -> takeFromEnded() }
  :: atomic { pc == BC -> beforeClaim() }
  :: atomic { pc == YIELD -> yieldLane() }
  :: atomic { pc == CLAIM -> claim() }
  :: atomic { pc == HANDLER && pauses > 0 ->   /* paused past its lease: the message comes back */
       pauses--; expired[r] = 1; send(r) }
  :: atomic { pc == HANDLER -> effect() }
  :: atomic { pc == OUTCOME -> outcome() }
  :: atomic { pc == REL -> release() }
  :: atomic { pc == LOOKQ -> lookQuery() }
  :: atomic { pc == LOOKADV -> lookAdvance() }
#ifdef CRASH
  :: atomic { pc != IDLE && crashes > 0 ->   /* crash: the message comes back, the lease runs out */
       crashes--; crashed = 1; send(r);
       if :: st[r] == RUN && owner[r] == me -> expired[r] = 1 :: else fi;
       inHandler[me] = 0; htok[me] = 0;
       break }
#endif
  od
}

/* the operator's runEnded (ops resolve): release, then look (no lost responses: a worker's cover them) */
inline opRunEnded(r) {
  atomic {
    if :: holder == r -> holder = 0; lw = me; relOk = 1 :: else -> relOk = (holder == 0) fi
  };
  if
  :: relOk ->
       atomic {
         f = (floor == 0 -> 1 : floor);
         do
         :: f <= NR && !open(f) -> f++
         :: else -> break
         od;
         if :: f <= NR && st[f] == WAIT -> send(f) :: else fi
       }
  :: else
  fi
}

/* lowerFloor(s): floor exists AND floor > s: floor := s. Here it stamps lastWrite even when it
   does not lower, so that a look that queried before the put cannot advance the floor past s. */
inline lowerFloor(s) {
  atomic {
#ifdef ASWRITTEN_LOWER
    if :: floor != 0 && floor > s -> floor = s; lw = me :: else fi
#else
    if :: floor != 0 && floor > s -> floor = s :: else fi;
    lw = me
#endif
  }
}

/* the planner (on-time runs in slot order, maybe leaving some out), backfill of those, and one
   operator action: retry (revive a terminal run) or resolve (settle a waiting run MANUAL) */
active proctype creator() {
  byte me = CREATOR;
  byte s, r, f, skipped;
  bool relOk;
  s = 1;
  do
  :: s <= NR ->
       if
       :: atomic { st[s] = WAIT; published[s] = 1; maxCreated = s; send(s) }   /* on time: no lower */
#ifndef NOBACKFILL
       :: s < NR -> skipped = skipped | bit(s)                                   /* left out */
#endif
       fi;
       s++
  :: else -> break
  od;
  s = 1;
  do
  :: s < NR ->
       if
       :: (skipped & bit(s)) && s < maxCreated ->   /* backfill */
#ifdef HAZARD_LOWER_BEFORE_PUT
            lowerFloor(s);
            st[s] = WAIT;
#else
            st[s] = WAIT;      /* put first */
            lowerFloor(s);
#endif
            atomic { published[s] = 1; send(s) }
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
  :: atomic { st[1] == WAIT -> r = 5 }
  :: atomic { st[2] == WAIT -> r = 6 }
  :: atomic { st[3] == WAIT -> r = 7 }
  fi;
  if
  :: r <= NR ->   /* ops retry: revive, then lowerFloor, then send */
       atomic { st[r] = WAIT; published[r] = 0 };
       lowerFloor(r);
       atomic { published[r] = 1; send(r) }
  :: r > NR ->    /* ops resolve (settle MANUAL), then runEnded if it may hold the lane */
       r = r - 4;
       atomic { if :: st[r] == WAIT -> st[r] = TERM; ended(r); s = tok[r] :: else -> s = 0 fi };
       if :: s > 0 -> opRunEnded(r) :: else fi
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

/* (d) every waiting run eventually leaves waiting (it runs, or is ended), unless a worker crashed */
#define W1 (st[1] == WAIT)
#define W2 (st[2] == WAIT)
#define W3 (st[3] == WAIT)
ltl progress { [] ((W1 -> <> (!W1 || crashed)) && (W2 -> <> (!W2 || crashed)) && (W3 -> <> (!W3 || crashed))) }
