#!/usr/bin/env python3
"""A mutant of the Python reference service with one defect: it acks after
its index write and before its notification. A crash between the ack and
the notification loses the notification for good: the broker will not
redeliver an acked message (seed 002, 三: ACK→写索引)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "examples", "consumer-service", "python"))

import consumer  # noqa: E402  (the reference)


class AckBeforeNotify(consumer.Service):
    def handle(self, e, ack):
        self.project(e)
        self.index_doc(e)
        ack()  # the defect: the ack comes before the notification
        consumer.log(f"{self.worker}: {e['eventId']} acked (before its notification)")
        self.notify_once(e)


if __name__ == "__main__":
    consumer.main(AckBeforeNotify)
