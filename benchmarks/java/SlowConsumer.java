import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.*;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/** The Java 4.9.4 twin of benchmarks/failover_real.py (docs/consuming.md 8.4).
 *  args: namesrv topic group n timeoutS sleepMsPerMessage killAfter pidFile, e.g.
 *  java_client.sh 494 SlowConsumer 127.0.0.1:9876 Fo2 g2 2000 120 10 500 $REFMQ_HOME/494/run/broker-a.pid
 *  Consumes slowly; after killAfter distinct messages SIGKILLs the pid in pidFile; prints the
 *  longest pause in broker-a's deliveries from the kill on, and distinct/deliveries. */
public class SlowConsumer {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[3]); int timeoutS = Integer.parseInt(args[4]);
        int sleepMs = Integer.parseInt(args[5]); int killAfter = Integer.parseInt(args[6]);
        String pidFile = args[7];
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger deliveries = new AtomicInteger();
        List<Long> aTimes = Collections.synchronizedList(new ArrayList<>());
        AtomicLong killAt = new AtomicLong(0);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(args[2]);
        c.setNamesrvAddr(args[0]);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setConsumeThreadMin(4); c.setConsumeThreadMax(4);
        c.setPullBatchSize(8); c.setPullThresholdForQueue(8);
        c.subscribe(args[1], "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                seen.add(new String(m.getBody())); deliveries.incrementAndGet();
                if (ctx.getMessageQueue().getBrokerName().equals("broker-a")) aTimes.add(System.nanoTime());
                try { Thread.sleep(sleepMs); } catch (InterruptedException e) { }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long t0 = System.nanoTime();
        while (seen.size() < n && System.nanoTime() - t0 < timeoutS * 1_000_000_000L) {
            Thread.sleep(50);
            if (killAt.get() == 0 && seen.size() >= killAfter) {
                String pid = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(pidFile))).trim();
                new ProcessBuilder("kill", "-9", pid).start().waitFor();
                killAt.set(System.nanoTime());
                System.out.println("killed broker-a master after " + seen.size());
            }
        }
        long prev = killAt.get(); double longest = 0; int after = 0;
        synchronized (aTimes) { for (long t : aTimes) if (t > killAt.get()) { after++; longest = Math.max(longest, (t - prev) / 1e9); prev = t; } }
        System.out.printf("distinct %d of %d, deliveries %d, broker-a reads after kill %d, longest pause from kill on %.2f s, total %.1f s%n",
            seen.size(), n, deliveries.get(), after, longest, (System.nanoTime() - t0) / 1e9);
        c.shutdown();
    }
}
