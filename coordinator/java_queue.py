"""``java.util.PriorityQueue``'s exact order (Python's heapq breaks ties differently).

Kafka's streams task assignor takes the least-loaded process and member from priority queues,
and where loads tie, which one it takes is the binary heap's: ``add`` sifts up while the new
element is strictly less than its parent, ``poll`` moves the last element to the root and sifts
it down towards the smaller child (the left one on a tie) while it is greater.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterable, TypeVar

T = TypeVar("T")


class JavaPriorityQueue(Generic[T]):
    def __init__(self, key: Callable[[T], object], items: Iterable[T] = ()):
        self._key = key
        self._heap: list[T] = []
        for item in items:
            self.add(item)

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, item: T) -> None:
        heap, key = self._heap, self._key
        k = len(heap)
        heap.append(item)
        value = key(item)
        while k > 0:
            parent = (k - 1) >> 1
            if not value < key(heap[parent]):
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = item

    def poll(self) -> T | None:
        heap, key = self._heap, self._key
        if not heap:
            return None
        top, last = heap[0], heap.pop()
        n = len(heap)
        if n:
            value, k = key(last), 0
            while (child := 2 * k + 1) < n:
                right = child + 1
                if right < n and key(heap[child]) > key(heap[right]):
                    child = right
                if not value > key(heap[child]):
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return top
