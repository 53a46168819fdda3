def second_largest(numbers):
    numbers.sort()
    return numbers[-2]
