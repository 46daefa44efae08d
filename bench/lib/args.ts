/**
 * Command-line flags of `npm run bench -- ...`. Every size has a default for the full run;
 * `--small` swaps in sizes that finish in about a minute (for development).
 */
export const SECTIONS = ['ingress', 'drain', 'latency', 'actors', 'scaleout', 'webchat', 'knowledge', 'ingestion', 'replicas', 'models', 'trust', 'trip', 'inbox', 'actions', 'replay', 'chaos'] as const;
export type Section = (typeof SECTIONS)[number];
/** Sections run only when named with --only: the chaos soak (12 minutes of faults by default). */
export const OPT_IN_SECTIONS: readonly Section[] = ['chaos'];
/** The chaos soak's faults, in the order they rotate. */
export const CHAOS_FAULTS = ['worker-kill', 'gateway-kill', 'nats-leader-kill', 'worker-term'] as const;
export type ChaosFault = (typeof CHAOS_FAULTS)[number];

export interface BenchArgs {
  sections: Section[];
  /** Ingress: seconds of measured load per round and target. */
  duration: number;
  /** Ingress: seconds of unmeasured load before the first round of each target. */
  warmup: number;
  /** Ingress: measured rounds per target, alternating gateway / floor; the table shows medians. */
  rounds: number;
  connections: number;
  /** Also run the experiments: gateway / floor with the NATS client's noAsyncTraces (bench/ingress-variant.ts), SQL client costs (bench/sql-probe.ts). */
  experiments: boolean;
  /** Ingress: also a gateway exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT at a local collector stand-in). */
  tracing: boolean;
  drainMessages: number;
  drainConversations: number;
  /** How the drain's messages are queued: straight into JetStream, or as signed webhooks through the gateway. */
  drainVia: 'direct' | 'gateway';
  /** The drain's questions: the eight the knowledge base answers (`fixed`), or the held-out sets' (`varied`: every question different, most not answered by it). */
  drainQuestions: 'fixed' | 'varied';
  /** Drain repetitions (the table shows the median). */
  drainRuns: number;
  latencyRate: number;
  latencyDuration: number;
  latencyClients: number;
  /** Conversation counts of the actor section. */
  actorSizes: number[];
  /** Actors: also let a real worker process one event for each seeded conversation (RSS after). */
  actorsWorker: boolean;
  scaleoutMessages: number;
  scaleoutConversations: number;
  /** Webchat: sockets opened to one widget's integration, and the loopback source addresses they come from. */
  webchatSockets: number;
  webchatAddresses: number;
  partitions: number;
  /** Knowledge: chunks per company for the search latency (the labelled set plus generated text). */
  knowledgeChunks: number;
  /** Knowledge: timed searches per configuration. */
  knowledgeSearches: number;
  /** Ingestion: documents of each format. */
  ingestionDocs: number;
  /** Ingestion: the checkout whose gateway is measured (default: this one). */
  ingestionRoot: string | null;
  /** Another checkout whose roles the compared sections also run, first, in the same run (ratios after / before). */
  baseline: string | null;
  /** Models: customers of the bursting company (one message each). */
  modelsBurst: number;
  /** Models: customers of another company writing during the burst. */
  modelsOther: number;
  /** Models: the model stand-in's answer time, ms. */
  modelsLatency: number;
  /** Models: MODEL_MAX_CONCURRENCY of the worker (0: its default). */
  modelsConcurrency: number;
  /** Models: the Chat2Desk stand-in's answer time for a send, ms. */
  helpdeskLatency: number;
  /** Actions: customers of each run (one message each), without and with the agent's action. */
  actionsCustomers: number;
  /** Actions: the model stand-in's answer time per turn, ms. */
  actionsModelLatency: number;
  /** Actions: the order API stand-in's answer time, ms. */
  actionsLatency: number;
  /** Replay: conversations of the replaying company (each gets --replay-messages answered customer messages), all replayed at once. */
  replayConversations: number;
  replayMessages: number;
  /** Replay: the model stand-in's answer time, ms (live answers and replayed ones). */
  replayModelLatency: number;
  /** Replay: another company's live customer messages per second, and for how many seconds each measured window lasts. */
  replayLiveRate: number;
  replayLiveDuration: number;
  /** Replay: rounds of a window without a replay then one with a replay running (the p99s pool the rounds). */
  replayLiveRounds: number;
  /** Replay: REPLAY_MAX_CONCURRENCY of the worker (0: its default). */
  replayConcurrency: number;
  /** Inbox: conversations of the one company (ten messages each on average). */
  inboxConversations: number;
  /** Inbox: list requests per filter. */
  inboxRequests: number;
  /** Inbox: operators holding the events stream (at most 50, SSE_MAX_PER_COMPANY). */
  inboxStreams: number;
  /** Inbox: customer messages per second through webhooks, and for how many seconds. */
  inboxRate: number;
  inboxDuration: number;
  /** Chaos: minutes of load (fractions allowed), webhooks per second, and the customers writing them. */
  chaosMinutes: number;
  chaosRate: number;
  chaosCustomers: number;
  /** Chaos: the nats-server binary of its cluster (null: test/support/nats-binary.ts natsServerBinary()). */
  chaosNatsServer: string | null;
  /** Chaos: seed of the fault schedule and the load's randomness (a random one unless given; printed). */
  chaosSeed: number;
  /** Chaos: the faults, in rotation (default all four). */
  chaosFaults: ChaosFault[];
  /** Chaos: the model stand-in's answer time for the model agent's company, ms. */
  chaosModelLatency: number;
  /** Run children with --cpu-prof and summarise the profiles. */
  profile: boolean;
  profileTop: number;
  /** Drain / scale-out: relay the workers' PostgreSQL connections through a counter (statements per message). */
  countQueries: boolean;
  /** Extra node flags for the gateway / worker children (diagnostics, e.g. --trace-gc). */
  childFlags: string[];
  out: string;
  /** Keep databases and streams (debugging). */
  keep: boolean;
  help: boolean;
}

export const USAGE = `npm run bench -- [flags]

  --only a,b,...            sections to run: ${SECTIONS.join(', ')} (default: all but ${OPT_IN_SECTIONS.join(', ')})
  --skip a,b,...            sections to leave out
  --small                   small sizes for a quick check (a few minutes)

  ingress   --duration S (10)  --warmup S (3)  --rounds N (3)  --connections N (50)
  drain     --drain-messages N (5000)  --drain-conversations M (500)  --drain-via direct|gateway
            --drain-runs N (1)  --drain-questions fixed|varied (fixed: the base's eight questions;
            varied: the held-out sets' questions, each different)
  latency   --latency-rate R (50 msg/s)  --latency-duration S (20)  --latency-clients N (250)
  actors    --actors 10000,100000  --actors-worker true|false (true)
  scaleout  --scaleout-messages N  --scaleout-conversations M (default: the drain's)
  webchat   --webchat-sockets N (5000)  --webchat-addresses M (250; N / M sockets each, at most
            WEBCHAT_MAX_SOCKETS_PER_IP = 20)
  knowledge --knowledge-chunks N (10000 per company)  --knowledge-searches N (1000)
  ingestion --ingestion-docs N (40 of each format, at most 200)  --ingestion-root DIR (another
            checkout's gateway, for the figures before a change)
  replicas  ingress on a 3-node NATS cluster, NATS_REPLICAS 1 vs 3 (uses --connections, --duration, --rounds)
  models    --models-burst N (5000)  --models-other N (20)  --models-latency MS (1000)
            --models-concurrency N (the worker's MODEL_MAX_CONCURRENCY; default: its default)
            --helpdesk-latency MS (150)
  actions   --actions-customers N (300)  --actions-model-latency MS (1000 per model turn)
            --actions-latency MS (100, the action's API)  --helpdesk-latency MS (150)
  replay    --replay-conversations N (200, at most 200)  --replay-messages N (3 answered customer messages
            each)  --replay-latency MS (1000, the model)  --replay-live-rate R (30 msg/s of another company)
            --replay-live-duration S (12 per window)  --replay-live-rounds N (2: without, with, without, with)
            --replay-concurrency N (the worker's REPLAY_MAX_CONCURRENCY;
            default: its default)  --helpdesk-latency MS (150)
  inbox     --inbox-conversations N (100000; ten messages each)  --inbox-requests N (200 per filter)
            --inbox-streams N (50)  --inbox-rate R (100 msg/s)  --inbox-duration S (20)
  chaos     (only with --only chaos) a soak under faults on a 3-node NATS cluster, 2 gateways, 2 workers:
            --chaos-minutes M (12; fractions allowed)  --chaos-rate R (15 webhooks/s)
            --chaos-customers N (300)  --chaos-nats-server PATH (default: NATS_SERVER_BIN, else the
            newest nats-server in .cache/, else the one on PATH)  --chaos-seed N (random; printed)
            --chaos-faults ${CHAOS_FAULTS.join(',')} (the rotation; default all)
            --chaos-model-latency MS (300)  --helpdesk-latency MS (150)

  --partitions N (16)       PARTITIONS of the children
  --baseline DIR            run drain, latency, scaleout, models, webchat, actions and chaos first with
                            the roles of the checkout DIR (its node_modules installed), then with this
                            one's, in the same run; the table adds each key figure's ratio this /
                            baseline (chaos: lost / doubled side by side)
  --profile                 run the children with --cpu-prof; summaries in bench/results/profiles/
  --profile-top N (25)      functions listed per profile
  --experiments             also measure proposed fixes: gateway and floor with the NATS client's
                            noAsyncTraces (bench/ingress-variant.ts), SQL client costs after the
                            drain (bench/sql-probe.ts)
  --tracing                 ingress: also a gateway exporting OpenTelemetry traces (to a local collector
                            stand-in), compared with the same floor
  --count-queries           drain / scale-out: count the workers' SQL statements (through a relay)
  --child-flags "..."       extra node flags for the gateway / worker children (e.g. --trace-gc)
  --out FILE                JSON result (bench/results/latest.json)
  --keep                    keep the bench databases and streams
`;

function num(name: string, v: string | undefined): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n < 0) throw new Error(`--${name} needs a number (got ${v ?? 'nothing'})`);
  return n;
}

function list(name: string, v: string | undefined): Section[] {
  if (!v) throw new Error(`--${name} needs a list of sections`);
  return v.split(',').map((s) => {
    const t = s.trim().replace(/^scale-out$/, 'scaleout') as Section;
    if (!SECTIONS.includes(t)) throw new Error(`--${name}: unknown section "${s}" (${SECTIONS.join(', ')})`);
    return t;
  });
}

function faults(v: string | undefined): ChaosFault[] {
  const out = (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const f of out) if (!(CHAOS_FAULTS as readonly string[]).includes(f)) throw new Error(`--chaos-faults: unknown fault "${f}" (${CHAOS_FAULTS.join(', ')})`);
  if (out.length === 0) throw new Error('--chaos-faults needs a list of faults');
  return out as ChaosFault[];
}

export function parseArgs(argv: string[]): BenchArgs {
  const a: BenchArgs = {
    sections: SECTIONS.filter((s) => !OPT_IN_SECTIONS.includes(s)),
    duration: 10,
    warmup: 3,
    rounds: 3,
    connections: 50,
    experiments: false,
    tracing: false,
    drainMessages: 5_000,
    drainConversations: 500,
    drainVia: 'direct',
    drainQuestions: 'fixed',
    drainRuns: 1,
    latencyRate: 50,
    latencyDuration: 20,
    latencyClients: 250,
    actorSizes: [10_000, 100_000],
    actorsWorker: true,
    scaleoutMessages: 0,
    scaleoutConversations: 0,
    webchatSockets: 5_000,
    webchatAddresses: 250,
    partitions: 16,
    knowledgeChunks: 10_000,
    knowledgeSearches: 1_000,
    ingestionDocs: 40,
    ingestionRoot: null,
    baseline: null,
    modelsBurst: 5_000,
    modelsOther: 20,
    modelsLatency: 1_000,
    modelsConcurrency: 0,
    helpdeskLatency: 150,
    actionsCustomers: 300,
    actionsModelLatency: 1_000,
    actionsLatency: 100,
    replayConversations: 200,
    replayMessages: 3,
    replayModelLatency: 1_000,
    replayLiveRate: 30,
    replayLiveDuration: 12,
    replayLiveRounds: 2,
    replayConcurrency: 0,
    inboxConversations: 100_000,
    inboxRequests: 200,
    inboxStreams: 50,
    inboxRate: 100,
    inboxDuration: 20,
    chaosMinutes: 12,
    chaosRate: 15,
    chaosCustomers: 300,
    chaosNatsServer: null,
    chaosSeed: Math.floor(Math.random() * 2 ** 31),
    chaosFaults: [...CHAOS_FAULTS],
    chaosModelLatency: 300,
    profile: false,
    profileTop: 25,
    countQueries: false,
    childFlags: [],
    out: 'bench/results/latest.json',
    keep: false,
    help: false,
  };
  let skip: Section[] = [];
  const explicit = new Set<string>();
  // --small first, so explicit sizes given with it win.
  if (argv.includes('--small')) {
    Object.assign(a, {
      duration: 3, warmup: 1, rounds: 1, drainMessages: 1_000, drainConversations: 100, latencyDuration: 5, latencyClients: 50,
      actorSizes: [2_000, 10_000], webchatSockets: 1_000, webchatAddresses: 50,
      knowledgeChunks: 2_000,
      knowledgeSearches: 300,
      ingestionDocs: 10,
      modelsBurst: 1_000,
      actionsCustomers: 100,
      replayLiveDuration: 8,
      replayLiveRounds: 1,
      inboxConversations: 20_000,
      inboxRequests: 100,
      inboxDuration: 10,
    });
  }
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    if (!raw.startsWith('--')) throw new Error(`unexpected argument "${raw}"`);
    const [flag, inline] = raw.slice(2).split('=', 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    explicit.add(flag);
    switch (flag) {
      case 'small': break;
      case 'help': case 'h': a.help = true; break;
      case 'only': a.sections = list(flag, value()); break;
      case 'skip': skip = list(flag, value()); break;
      case 'duration': a.duration = num(flag, value()); break;
      case 'warmup': a.warmup = num(flag, value()); break;
      case 'rounds': a.rounds = Math.max(1, Math.round(num(flag, value()))); break;
      case 'experiments': a.experiments = true; break;
      case 'tracing': a.tracing = true; break;
      case 'connections': a.connections = Math.max(1, Math.round(num(flag, value()))); break;
      case 'drain-messages': a.drainMessages = Math.round(num(flag, value())); break;
      case 'drain-conversations': a.drainConversations = Math.max(1, Math.round(num(flag, value()))); break;
      case 'drain-runs': a.drainRuns = Math.max(1, Math.round(num(flag, value()))); break;
      case 'drain-questions': {
        const v = value();
        if (v !== 'fixed' && v !== 'varied') throw new Error('--drain-questions is fixed or varied');
        a.drainQuestions = v;
        break;
      }
      case 'drain-via': {
        const v = value();
        if (v !== 'direct' && v !== 'gateway') throw new Error('--drain-via is direct or gateway');
        a.drainVia = v;
        break;
      }
      case 'latency-rate': a.latencyRate = num(flag, value()); break;
      case 'latency-duration': a.latencyDuration = num(flag, value()); break;
      case 'latency-clients': a.latencyClients = Math.max(1, Math.round(num(flag, value()))); break;
      case 'actors': a.actorSizes = (value() ?? '').split(',').filter(Boolean).map((s) => Math.round(num(flag, s))); break;
      case 'actors-worker': a.actorsWorker = !['false', '0', 'no', 'off'].includes(String(value())); break;
      case 'scaleout-messages': a.scaleoutMessages = Math.round(num(flag, value())); break;
      case 'scaleout-conversations': a.scaleoutConversations = Math.max(1, Math.round(num(flag, value()))); break;
      case 'webchat-sockets': a.webchatSockets = Math.max(1, Math.round(num(flag, value()))); break;
      case 'webchat-addresses': a.webchatAddresses = Math.max(1, Math.min(250 * 250, Math.round(num(flag, value())))); break;
      case 'partitions': a.partitions = Math.max(1, Math.round(num(flag, value()))); break;
      case 'knowledge-chunks': a.knowledgeChunks = Math.max(100, Math.round(num(flag, value()))); break;
      case 'knowledge-searches': a.knowledgeSearches = Math.max(10, Math.round(num(flag, value()))); break;
      case 'ingestion-docs': a.ingestionDocs = Math.max(1, Math.round(num(flag, value()))); break;
      case 'ingestion-root': a.ingestionRoot = value() ?? null; break;
      case 'baseline': a.baseline = value() ?? null; break;
      case 'models-burst': a.modelsBurst = Math.max(1, Math.round(num(flag, value()))); break;
      case 'models-other': a.modelsOther = Math.max(1, Math.round(num(flag, value()))); break;
      case 'models-latency': a.modelsLatency = Math.round(num(flag, value())); break;
      case 'models-concurrency': a.modelsConcurrency = Math.round(num(flag, value())); break;
      case 'helpdesk-latency': a.helpdeskLatency = Math.round(num(flag, value())); break;
      case 'actions-customers': a.actionsCustomers = Math.max(1, Math.round(num(flag, value()))); break;
      case 'actions-model-latency': a.actionsModelLatency = Math.round(num(flag, value())); break;
      case 'actions-latency': a.actionsLatency = Math.round(num(flag, value())); break;
      case 'replay-conversations': a.replayConversations = Math.max(1, Math.min(200, Math.round(num(flag, value())))); break;
      case 'replay-messages': a.replayMessages = Math.max(1, Math.min(20, Math.round(num(flag, value())))); break;
      case 'replay-latency': a.replayModelLatency = Math.round(num(flag, value())); break;
      case 'replay-live-rate': a.replayLiveRate = Math.max(1, num(flag, value())); break;
      case 'replay-live-duration': a.replayLiveDuration = Math.max(1, num(flag, value())); break;
      case 'replay-live-rounds': a.replayLiveRounds = Math.max(1, Math.min(5, Math.round(num(flag, value())))); break;
      case 'replay-concurrency': a.replayConcurrency = Math.round(num(flag, value())); break;
      case 'inbox-conversations': a.inboxConversations = Math.max(100, Math.round(num(flag, value()))); break;
      case 'inbox-requests': a.inboxRequests = Math.max(1, Math.round(num(flag, value()))); break;
      case 'inbox-streams': a.inboxStreams = Math.max(1, Math.min(50, Math.round(num(flag, value())))); break;
      case 'inbox-rate': a.inboxRate = Math.max(1, num(flag, value())); break;
      case 'inbox-duration': a.inboxDuration = Math.max(1, num(flag, value())); break;
      case 'chaos-minutes': {
        a.chaosMinutes = num(flag, value());
        if (a.chaosMinutes <= 0) throw new Error('--chaos-minutes needs a positive number');
        break;
      }
      case 'chaos-rate': a.chaosRate = Math.max(0.1, num(flag, value())); break;
      case 'chaos-customers': a.chaosCustomers = Math.max(2, Math.round(num(flag, value()))); break;
      case 'chaos-nats-server': a.chaosNatsServer = value() ?? null; break;
      case 'chaos-seed': a.chaosSeed = Math.round(num(flag, value())) % 2 ** 31; break;
      case 'chaos-faults': a.chaosFaults = faults(value()); break;
      case 'chaos-model-latency': a.chaosModelLatency = Math.round(num(flag, value())); break;
      case 'profile': a.profile = inline === undefined || !['false', '0'].includes(inline); break;
      case 'profile-top': a.profileTop = Math.round(num(flag, value())); break;
      case 'count-queries': a.countQueries = true; break;
      case 'child-flags': a.childFlags = (value() ?? '').split(/\s+/).filter(Boolean); break;
      case 'out': a.out = value() ?? a.out; break;
      case 'keep': a.keep = true; break;
      default: throw new Error(`unknown flag --${flag}\n\n${USAGE}`);
    }
  }
  a.sections = a.sections.filter((s) => !skip.includes(s));
  if (!explicit.has('scaleout-messages')) a.scaleoutMessages = a.drainMessages;
  if (!explicit.has('scaleout-conversations')) a.scaleoutConversations = a.drainConversations;
  return a;
}
