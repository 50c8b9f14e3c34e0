/*
 * The exclusive-lane protocol (docs/design.md, "Exclusive lanes"), forbid-queue policy, with the
 * claim, lease and fence it relies on. One lane, runs 1..3 (slot = run number), 2 workers, one
 * creator/operator process. Checked by Spin through `npm run model-check` (tools/model-check.ts);
 * the mapping to the code and the README is in models/README.md.
 *
 * Each worker is a step machine: one step = one call to DynamoDB or SQS (an atomic conditional
 * write, a Query, a send), with the worker's own decisions folded into the step that reads what
 * they depend on. The steps are claimInLane's, in its order (shared/worker/lanes.ts): acquire
 * (or getRun + takeFromEnded), claim (the run only), on 'leased' after an 'acquired' take
 * release(onlyTake) + look, confirm (acquire again under the claim; blocked: giveBack), the
 * forbid-queue order check on the confirm's floor (give way: release, giveBack, look), handler,
 * outcome, runEnded (release + look). Names of steps and inlines are the code's functions.
 *
 * Abstractions (each keeps the code's behaviours, or says what it bounds):
 * - A write's response may be lost (budget LOSSES): the write committed, the writer sees a
 *   failure and retries by its rule (acquire: heldBy(r) lets the retry through; takeFromEnded
 *   and release recognise their own commit by lastWrite; claim recognises its own lease; the
 *   outcome write its own status under its token).
 * - SQS is a bag: msgs[r] copies of run r's message (at most MAXMSG: a further identical copy is
 *   merged); any may be received next; one may be delivered twice (budget DUPS). A message not
 *   acked (crash, pause past the visibility timeout, RETRY) comes back. A send is folded into
 *   the step before it (a message received later is the same as one sent later).
 * - Time: every run is due. lastWrite holds the writer (1, 2: workers, 3: creator/operator): a
 *   worker writes nothing on the lane between its release and its advanceFloor, so "lastWrite =
 *   my release's id" is "lastWrite = me"; worker w's take of the lane in its current delivery is
 *   w + 4; on its next receive, w's ids of the earlier delivery become w + 8 (match nothing). A look may advance the floor (budget ADVANCES; the code's ">= 8 ended
 *   runs passed over" needs a longer history than 3 runs) to min(f.slot, now - 10 s), where
 *   now - 10 s is over-approximated by maxCreated + 1 (every later on-time run is above it).
 * - A claim refused by another worker's live lease ('leased') hides the message: it comes back.
 *   A confirm that is blocked gives the claim back, and the message comes back.
 * - A pause (budget PAUSES) lets the lease run out while the worker is in its handler; its
 *   message comes back; the worker then goes on with its old token. A crash (-DCRASH, budget 1)
 *   stops a worker at any step; its message comes back, its lease runs out.
 *
 * Variants: -DHAZARD_x puts back one known hazard (among them the earlier protocol's order of
 * steps); -DASWRITTEN_LOWER the protocol text's lowerFloor (models/README.md).
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
byte htk;               /* holderToken: the token the holder's confirm wrote (0: none yet) */
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

/* ---- the worker's steps (claimInLane, runEnded, handOn in shared/worker/lanes.ts) ---- */
#define IDLE 0
#define ACQ 1         /* acquire(r, take) */
#define READH 2       /* getRun(holder) after a blocked acquire */
#define TAKE 3        /* takeFromEnded(r, h, take) */
#define CLAIM 4       /* claim: the run only */
#define LREL 5        /* claim refused 'leased' after an 'acquired' take: release(r, onlyTake) */
#define CONFIRM 6     /* acquire(r, take) again, under the claim */
#define GIVEBACK 7    /* giveBack(r): RUNNING -> waiting, my owner and token */
#define BC 8          /* the forbid-queue order check: Query of open runs in [fl, r) */
#define YIELD 9       /* giving way: release(r) */
#define HANDLER 10    /* the handler's fenced write */
#define OUTCOME 11    /* the outcome write */
#define REL 12        /* runEnded: release(r) */
#define LOOKQ 13      /* look (handOn): Query, send */
#define LOOKADV 14    /* look: advanceFloor */

/* after the take: the claim (the earlier protocol: the order check first) */
#ifdef HAZARD_CHECK_BEFORE_CLAIM
#define TAKEN BC
#else
#define TAKEN CLAIM
#endif

#define ACQUIRED 1
#define HELD 2

/* lastWrite ids of worker me: me (its release), TAKEID (this delivery's take), me + 8 (a write of
   an earlier delivery: matches no condition of this one) */
#define TAKEID (me + 4)

/* forget the delivery's locals (fewer states), back to the queue */
#define FINISH pc = IDLE; r = 0; h = 0; fl = 0; mytok = 0; out = 0; bound = 0; lost = 0; after = IDLE; kind = 0; freed = 0; look = 0

/* step 1, acquire(r, take): laneFree OR heldBy(r): holder := r, lastWrite := take; returns the
   old item (its floor; 'held' when it was r's already under another take). Blocked: getRun(h). */
inline acquire() {
  fl = floor;
  if
  :: holder == 0 || holder == r ->
       kind = ((holder == r && lw != TAKEID) -> HELD : ACQUIRED);
       holder = r; lw = TAKEID; snapshotOlder(r); LOSE;
       pc = (lost -> ACQ : TAKEN)   /* lost: the retry passes as heldBy(r), and says 'acquired' */
  :: else -> h = holder; pc = READH
  fi
}

/* takeFromEnded(r, h, take): heldBy(h) AND run h terminal or missing (one transaction) */
inline takeFromEnded() {
  if
  :: holder == h && (st[h] == TERM || st[h] == ABSENT) ->
       holder = r; htk = 0; lw = TAKEID; kind = ACQUIRED; snapshotOlder(r); LOSE;
       pc = (lost -> TAKE : TAKEN)
  :: else ->
       if
       :: holder == r && lw == TAKEID -> kind = ACQUIRED; pc = TAKEN   /* the retry recognises its own commit */
       :: else -> pc = ACQ                                              /* the lane moved: acquire again */
       fi
  fi
}

/* after the claim: the confirm (HAZARD_NO_CONFIRM: straight to the order check) */
#ifdef HAZARD_NO_CONFIRM
#define AFTERCLAIM BC
#else
#define AFTERCLAIM CONFIRM
#endif

/* step 2, claim(r): waiting, or RUNNING with its lease run out: RUNNING, token + 1, lease to me.
   Not tied to the lane. */
inline claim() {
  if
  :: st[r] == WAIT || (st[r] == RUN && expired[r]) ->
       st[r] = RUN; tok[r]++; owner[r] = me; expired[r] = 0; mytok = tok[r];
       LOSE;
       if :: !lost -> pc = AFTERCLAIM :: else fi
  :: st[r] == RUN && owner[r] == me && !expired[r] && lost ->   /* the retry finds its own lease */
       lost = 0; pc = AFTERCLAIM
  :: else ->
       lost = 0;
       if
       :: st[r] == TERM || st[r] == ABSENT -> after = IDLE; mytok = tok[r]; pc = REL   /* runEnded(r, its token as read) */
       :: else -> pc = (kind == ACQUIRED -> LREL : IDLE)                  /* 'leased' */
       fi;
       if :: pc == IDLE -> send(r); FINISH :: else fi   /* hidden: the message comes back */
  fi
}

/* 'leased' after an 'acquired' take: release(r, onlyTake = take): heldBy(r) AND lastWrite = take */
#ifdef HAZARD_LEASED_RELEASES_ANY
#define UNTOUCHED true
#else
#define UNTOUCHED lw == TAKEID
#endif
inline leasedRelease() {
  if
  :: holder == r && UNTOUCHED -> holder = 0; htk = 0; lw = me; freed = 1; send(r); pc = LOOKQ
  :: else -> send(r); FINISH
  fi   /* hidden: the message comes back */
}

/* the handler may start: the order property */
inline enterHandler() {
  /* (b) slot order: no older run open and published since this worker took the lane */
  assert((olderOpen[me] & (bit(1) | bit(2))) == 0);
  inHandler[me] = r; htok[me] = mytok; pc = HANDLER
}

/* step 3, confirm: acquire(r, take, token) under the claim: laneFree OR (heldBy(r) AND the marker's token is not newer
   than mine); writes my token, so that a release by an earlier incarnation of r (ops retry revived
   it before that release landed) is refused. Blocked: giveBack, the message comes back */
#ifdef HAZARD_UNTOKENED_RELEASE
#define TOKEN_NOT_NEWER(t) true
#else
#define TOKEN_NOT_NEWER(t) (htk <= t)
#endif
inline confirm() {
  if
  :: holder == 0 || (holder == r && TOKEN_NOT_NEWER(mytok)) ->
       holder = r; lw = TAKEID; htk = mytok;
#ifndef HAZARD_OLD_FLOOR
       fl = floor;
#endif
       snapshotOlder(r); LOSE;
       if
       :: lost -> skip   /* the retry passes as heldBy(r) */
       :: else ->
#ifdef HAZARD_CHECK_BEFORE_CLAIM
            enterHandler()
#else
            pc = BC
#endif
       fi
  :: else -> after = CONFIRM; pc = GIVEBACK
  fi
}

/* giveBack(r): RUNNING, my owner and token: back to waiting (the attempt refunded) */
inline giveBack() {
  if
  :: st[r] == RUN && owner[r] == me && tok[r] == mytok -> st[r] = WAIT; owner[r] = 0
  :: else
  fi;
  if
  :: after == CONFIRM -> send(r); FINISH          /* hidden briefly: it comes back */
#ifndef HAZARD_LOOK_BEFORE_RELEASE
  :: after == YIELD -> pc = LOOKQ                 /* given back: look, whatever the release said (a lost response) */
#endif
  :: else -> FINISH
  fi
}

/* step 4, forbid-queue: an open run with slot in [fl, r) exists: give way (release, giveBack,
   look), else run */
inline orderCheck() {
  if
  :: (fl <= 1 && r > 1 && open(1)) || (fl <= 2 && r > 2 && open(2)) ->
#ifdef HAZARD_CHECK_BEFORE_CLAIM
       after = IDLE; pc = REL       /* the earlier protocol: release + look, no claim to give back */
#elif defined(HAZARD_ACK_WITHOUT_RELEASE)
       after = IDLE; pc = GIVEBACK  /* gives the claim back, acks, keeps the lane */
#elif defined(HAZARD_LOOK_BEFORE_RELEASE)
       after = BC; freed = 0; pc = LOOKQ   /* looks first, then releases and gives back */
#else
       pc = YIELD
#endif
  :: else ->
#ifdef HAZARD_CHECK_BEFORE_CLAIM
       pc = CLAIM
#else
       enterHandler()
#endif
  fi
}

/* giving way: release(r) (heldBy(r)); a lost response: the retry recognises its own commit */
inline yieldLane() {
  if
  :: holder == r && TOKEN_NOT_NEWER(mytok) -> holder = 0; htk = 0; lw = me; LOSE; look = 1; freed = 1
  :: else -> freed = (lw == me); look = (freed || holder == 0)
  fi;
  if :: lost -> lost = 0 :: else -> after = YIELD; pc = GIVEBACK fi
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

/* runEnded(r): release(r) (heldBy(r)); a lost response: the retry recognises its own commit by
   lastWrite; refused with the lane free: look anyway (mustLook) */
inline release() {
  if
  :: holder == r && TOKEN_NOT_NEWER(mytok) -> holder = 0; htk = 0; lw = me; freed = 1; LOSE;
       if :: lost -> skip :: else -> pc = LOOKQ fi
  :: else ->
#ifdef HAZARD_REFUSED_NO_LOOK
       FINISH
#else
       lost = 0; freed = (lw == me);
       if :: freed || holder == 0 -> pc = LOOKQ :: else -> FINISH fi
#endif
  fi
}

/* look (handOn, forbid-queue): the first open run f from the floor on; send it if it waits; then,
   if this delivery's release freed the lane, maybe advanceFloor to min(f.slot, now - 10 s) */
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
  :: freed && advances > 0 && floor < bound ->   /* advanceFloor(release id, bound): lastWrite = id */
       advances--;
#ifdef HAZARD_ADVANCE_UNCONDITIONAL
       floor = bound; lw = me
#else
       if :: lw == me -> floor = bound :: else fi
#endif
  fi;
#ifdef HAZARD_LOOK_BEFORE_RELEASE
  if :: after == BC -> pc = YIELD :: else -> FINISH fi   /* then release */
#else
  FINISH
#endif
}

/* a message of run r is received (a duplicate delivery leaves a copy in the queue); this
   worker's ids of its earlier delivery are stale */
#define RECEIVE if :: dups > 0 -> dups-- :: true -> msgs[r]-- fi; \
  if :: lw == me || lw == TAKEID -> lw = me + 8 :: else fi; \
  pc = ACQ

proctype worker(byte me) {
  byte pc, r, h, fl, mytok, out, bound, after, kind;
  bool lost, freed, look;
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
  :: atomic { pc == CLAIM -> claim() }
  :: atomic { pc == LREL -> leasedRelease() }
  :: atomic { pc == CONFIRM -> confirm() }
  :: atomic { pc == GIVEBACK -> giveBack() }
  :: atomic { pc == BC -> orderCheck() }
  :: atomic { pc == YIELD -> yieldLane() }
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
    if :: holder == r && TOKEN_NOT_NEWER(s) -> holder = 0; htk = 0; lw = me; relOk = 1 :: else -> relOk = (holder == 0) fi
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
