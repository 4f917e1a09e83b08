"""The grading engine: hidden tests in a trusted process, student code in an unprivileged sandbox.

Processes (all forks of one template that imported torch once):
- batch (the command, batch.py): finds submissions, hands them out, writes the gradebook;
- template (pool.py): forked before the batch reads anything about the class; forks one
  worker per submission, so a worker that dies costs only its own submission;
- worker (worker.py): unpacks one submission, forks its trusted process and, on request, sandboxes;
- trusted (trusted.py): runs pytest on grading_tests with SandboxGateway (client.py) as the
  `student` fixture; checks every answer (replies.py) before a test sees it;
- sandbox (sandbox.py): drops privileges (isolation.py), imports the student's code, answers
  calls with plain tensors over the wire (protocol.py).
"""
