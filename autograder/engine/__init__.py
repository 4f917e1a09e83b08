"""The grading engine: hidden tests in a trusted process, student code in an unprivileged sandbox.

Processes (all forks of one template that imported torch once):
- batch (the command): finds submissions, hands them to workers, writes the gradebook;
- worker: per submission, forks a trusted grading process and, on its request, sandboxes;
- trusted: runs pytest on grading_tests with SandboxGateway as the `student` fixture;
- sandbox: drops privileges, imports the student's code, answers calls with plain tensors.
"""
