import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The official 5.x push consumer with server-side rebalance (setClientRebalance(false)): it
 * asks a broker for its queues (QUERY_ASSIGNMENT) and pops when the group's mode for the topic
 * is POP (mqadmin5 setConsumeMode ... -m POP). Counts distinct messages until N arrived, prints
 * how many came by pop (POP_CK property) and exits 0 when all N arrived.
 *
 *   java_client.sh 520 PopPushConsumer NAMESRV TOPIC GROUP N [TIMEOUT_S=60]
 */
public class PopPushConsumer {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[3]);
        int timeoutS = args.length > 4 ? Integer.parseInt(args[4]) : 60;
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger popped = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[2]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setClientRebalance(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(args[1], "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (m.getProperty("POP_CK") != null) popped.incrementAndGet();
                seen.add(m.getMsgId());
            }
            if (seen.size() >= n) done.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean ok = done.await(timeoutS, TimeUnit.SECONDS);
        consumer.shutdown();
        System.out.println("received " + seen.size() + " distinct messages (wanted " + n + "), "
            + popped.get() + " by pop" + (ok ? "" : " -- TIMEOUT"));
        System.exit(ok ? 0 : 1);
    }
}
